"""Stand-in for cupy.cuda."""
from cupy.cuda import runtime  # noqa: F401
