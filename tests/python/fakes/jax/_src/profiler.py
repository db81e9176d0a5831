"""Stand-in for jax._src.profiler, where device_memory_profile is defined: it returns the gzipped
pprof a test job sets."""
_profile = b""
backends_asked = []


def device_memory_profile(backend=None):
    backends_asked.append(backend)
    return _profile
