#!/usr/bin/env python3
"""The code pages of its executable a process has run, as file offsets (one hex offset a line):
with scripts/gpu/code_pages.c preloaded, the executable's code mappings in /proc/PID/maps that
are executable again. Used by scripts/gpu/touched_pages.sh."""

import os
import sys


def pages(pid):
    exe = os.readlink(f"/proc/{pid}/exe")
    out = []
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            parts = line.split()
            if len(parts) < 6 or parts[5] != exe or parts[1] != "r-xp":
                continue
            start, end = (int(x, 16) for x in parts[0].split("-"))
            offset = int(parts[2], 16)
            out += [f"{offset + i:x}" for i in range(0, end - start, 4096)]
    return out


if __name__ == "__main__":
    if len(sys.argv) == 2:
        print("\n".join(pages(int(sys.argv[1]))))
    else:
        sys.exit(__doc__)
