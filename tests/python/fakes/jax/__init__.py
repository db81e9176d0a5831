"""A stand-in for jax with only what the gpumon probe reads: jax._src.xla_bridge._backends,
jax.profiler.device_memory_profile and jax.live_arrays."""
__version__ = "0.11.2+fake"

from jax._src import xla_bridge  # noqa: E402,F401
from jax import profiler  # noqa: E402,F401

_live = []  # what live_arrays() returns


def live_arrays(platform=None):
    return list(_live)
