"""Stand-in for jax._src."""
