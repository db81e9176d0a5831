"""A stand-in for jax with only what the gpumon probe reads: jax._src.xla_bridge._backends."""
__version__ = "0.11.2+fake"

from jax._src import xla_bridge  # noqa: E402,F401
