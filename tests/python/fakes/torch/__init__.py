"""A stand-in for torch with only what the gpumon probe reads: torch.cuda and a few of torch._C's
CUDA allocator hooks."""
__version__ = "2.11.0+fake"

import ctypes  # noqa: E402,F401  (torch/__init__.py imports it too: the probe relies on that)

from torch import _C  # noqa: E402,F401
from torch import cuda  # noqa: E402,F401
from torch.cuda import OutOfMemoryError  # noqa: E402,F401

if __import__("os").environ.get("FAKE_TORCH_IMPORT_DELAY"):  # the rest of torch's long import
    __import__("time").sleep(float(__import__("os").environ["FAKE_TORCH_IMPORT_DELAY"]))
