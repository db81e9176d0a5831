"""Stand-in for jax._src.xla_bridge: ``_backends`` is empty until a job calls ``_init``."""
import ctypes
import os

_backends = {}


class Device:
    def __init__(self, ordinal, stats):
        self.id = ordinal
        self.local_hardware_id = ordinal
        self.stats = stats

    def memory_stats(self):
        return self.stats


class Backend:
    def __init__(self, devices):
        self.devices_ = devices

    def local_devices(self):
        return self.devices_


def _init(stats_by_ordinal):
    """What jax.devices() would do on a GPU machine: load and initialise CUDA, create backends."""
    ctypes.CDLL(os.environ["FAKE_LIBCUDA"]).cuInit(0)
    _backends["cpu"] = Backend([Device(0, None)])
    _backends["cuda"] = Backend([Device(i, s) for i, s in sorted(stats_by_ordinal.items())])
