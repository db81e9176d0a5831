"""A stand-in for torch with only what the gpumon probe reads: torch.cuda and a few of torch._C's
CUDA allocator hooks."""
__version__ = "2.11.0+fake"

from torch import _C  # noqa: E402,F401
from torch import cuda  # noqa: E402,F401
