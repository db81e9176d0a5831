"""A stand-in for jax with only what the gpumon probe reads: jax._src.xla_bridge._backends,
jax.profiler.device_memory_profile, jax.live_arrays and jax._src.distributed.global_state.
``process_index()`` kills the process: the probe must never call it (it could initialise a
backend)."""
__version__ = "0.11.2+fake"

from jax._src import distributed, xla_bridge  # noqa: E402,F401
from jax import profiler  # noqa: E402,F401

_live = []  # what live_arrays() returns


def live_arrays(platform=None):
    return list(_live)


def process_index():
    __import__("os").abort()
