"""A stand-in for cupy with only what the gpumon probe reads: the default memory pool."""
import ctypes
import os

from cupy import cuda

__version__ = "14.2.0+fake"


class MemoryPool:
    """Per-device (used, total, free, limit[, free blocks]) figures; reads the calling thread's current device."""

    def __init__(self):
        self.figures = {}

    def _now(self):
        return self.figures.get(cuda.runtime.getDevice(), (0, 0, 0, 0))

    def used_bytes(self):
        return self._now()[0]

    def total_bytes(self):
        return self._now()[1]

    def free_bytes(self):
        return self._now()[2]

    def get_limit(self):
        return self._now()[3]

    def n_free_blocks(self):
        now = self._now()
        return now[4] if len(now) > 4 else 0


_pool = MemoryPool()


def get_default_memory_pool():
    return _pool


def _use(figures):
    """What allocating would do: load and initialise CUDA, then fill the pool."""
    ctypes.CDLL(os.environ["FAKE_LIBCUDA"]).cuInit(0)
    _pool.figures.update(figures)
