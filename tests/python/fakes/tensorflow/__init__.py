"""A stand-in for tensorflow with only what the gpumon probe reads: the eager context."""
__version__ = "2.17.0+fake"

from tensorflow.python.eager import context  # noqa: E402,F401
