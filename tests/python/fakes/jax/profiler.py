"""Stand-in for jax.profiler: re-exports jax._src.profiler's device_memory_profile, as JAX's does."""
from jax._src.profiler import device_memory_profile  # noqa: F401
