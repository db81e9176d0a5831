"""A stand-in for torch with only what the gpumon probe reads: torch.cuda."""
__version__ = "2.11.0+fake"

from torch import cuda  # noqa: E402,F401
