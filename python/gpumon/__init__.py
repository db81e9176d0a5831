"""gpumon: where a machine's GPU memory goes, and why an allocation failed.

The work is done by the `gpumon` binary that the wheel installs next to the environment's Python
scripts. This package finds that binary (`python -m gpumon ...` runs it) and carries the allocator
probe's start-up hook, `gpumon/probe/sitecustomize.py` and its package
`gpumon/probe/_gpumon_probe/`, the same files the binary embeds.
"""

from __future__ import annotations

import os
import shutil
import sysconfig
from importlib import metadata

try:
    # The distribution's name on PyPI, not the import name (PyPI's `gpumon` is another project).
    __version__: str | None = metadata.version("gpumon-tui")
except metadata.PackageNotFoundError:  # imported from a source tree, not installed
    __version__ = None

BINARY = "gpumon"


def binary_dirs() -> list[str]:
    """The directories where an installed wheel puts the binary, most specific first.

    The scripts directory of the environment running this Python (a venv's `bin`, pipx's or
    uv's tool environment, the system prefix), then the user scheme's (`pip install --user`).
    """
    dirs = [sysconfig.get_path("scripts")]
    user_scheme = f"{os.name}_user"
    if user_scheme in sysconfig.get_scheme_names():
        dirs.append(sysconfig.get_path("scripts", user_scheme))
    return [d for d in dict.fromkeys(dirs) if d]


def find_binary() -> str | None:
    """The path of the gpumon binary: this environment's first, then the first one on PATH."""
    for directory in binary_dirs():
        candidate = os.path.join(directory, BINARY)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which(BINARY)
