"""The CUDA driver API (ctypes on ``libcuda.so.1``), reached only when the process has loaded the
library itself (``dlopen`` with RTLD_NOLOAD) and never initialised here (``cuInit`` is never
called: before the job initialised it, every call fails and the probe reports nothing). It names
devices by UUID for JAX and CuPy and tells whether a device's primary context exists already."""

import os
import sys


class Driver:
    """The driver's few calls the probe makes."""

    def __init__(self, ctypes, lib):
        self.c = ctypes
        self.lib = lib

    def count(self):
        """Visible devices, or None while the driver is not initialised (no CUDA use yet)."""
        n = self.c.c_int()
        return n.value if self.lib.cuDeviceGetCount(self.c.byref(n)) == 0 else None

    def handle(self, ordinal):
        dev = self.c.c_int()
        return dev.value if self.lib.cuDeviceGet(self.c.byref(dev), ordinal) == 0 else None

    def active(self, ordinal):
        """Whether the device's primary context exists already (so using it creates none)."""
        dev, flags, on = self.handle(ordinal), self.c.c_uint(), self.c.c_int()
        if dev is None:
            return False
        rc = self.lib.cuDevicePrimaryCtxGetState(dev, self.c.byref(flags), self.c.byref(on))
        return rc == 0 and on.value != 0

    def uuid(self, ordinal):
        dev, raw = self.handle(ordinal), (self.c.c_ubyte * 16)()
        get = getattr(self.lib, "cuDeviceGetUuid_v2", None) or self.lib.cuDeviceGetUuid
        if dev is None or get(raw, dev) != 0:
            return None
        h = bytes(raw).hex()
        return "GPU-%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


def driver(probe):
    """The probe's Driver, or None while the process has not loaded the driver library."""
    if probe.driver is None:
        import ctypes
        name = os.environ.get("GPUMON_PROBE_LIBCUDA") or "libcuda.so.1"
        try:
            probe.driver = Driver(ctypes, ctypes.CDLL(name, mode=os.RTLD_NOLOAD))
        except OSError:
            return None
    return probe.driver


def cuda_initialised(probe):
    """Whether the process has initialised CUDA (asked only where ctypes is loaded already)."""
    if "ctypes" not in sys.modules:
        return False
    drv = driver(probe)
    return drv is not None and drv.count() is not None


def cuda_uuid(probe, ordinal):
    """The UUID of a CUDA ordinal from the driver, cached; None when it cannot be had."""
    key = ("cuda", ordinal)
    if key not in probe.uuids:
        drv = driver(probe)
        uuid = drv.uuid(ordinal) if drv is not None and ordinal is not None else None
        if uuid is None:
            return None
        probe.uuids[key] = uuid
    return probe.uuids[key]
