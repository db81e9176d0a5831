"""`python -m gpumon ARGS`: runs the installed gpumon binary with ARGS.

For example `python -m gpumon run -- python train.py` inside a venv.
"""

from __future__ import annotations

import os
import sys

from gpumon import binary_dirs, find_binary


def main() -> int:
    """Replace this Python process with the gpumon binary, passing the arguments on."""
    binary = find_binary()
    if binary is None:
        looked = ", ".join(binary_dirs())
        sys.stderr.write(
            f"gpumon: the gpumon binary is not installed in this environment (looked in {looked} "
            "and on PATH); reinstall the wheel: pip install --force-reinstall gpumon\n"
        )
        return 2
    os.execv(binary, [binary, *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
