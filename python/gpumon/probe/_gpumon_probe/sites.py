"""Allocations by the line of the job's code that made them: of each stack (innermost first),
the first frame that is the job's own code (not under the framework's package or the standard
library, not in site-/dist-packages, not ``<frozen …>``), else the innermost; names cut to 256
and 128 characters (they are data from the job's process, written as data)."""

import os

from .common import clip, num

MAX_SKIPS = 1024  # innermost frames whose stacks own_frame remembers


class Own(dict):
    """filename -> whether it is the job's own code: not under a framework's package or the
    standard library, not in site-/dist-packages, not <frozen ...>."""

    def __init__(self, framework_dirs):
        super().__init__()
        self.skip = tuple(d.rstrip(os.sep) + os.sep for d in framework_dirs if d)
        self.skip += (os.path.dirname(os.__file__).rstrip(os.sep) + os.sep,)

    def __missing__(self, filename):
        name = filename if isinstance(filename, str) else ""
        own = not (name.startswith("<frozen") or name.startswith(self.skip)
                   or "/site-packages/" in name or "/dist-packages/" in name)
        self[filename] = own
        return own


class Sites:
    """Allocated blocks aggregated by their first frame in the job's own code."""

    def __init__(self, framework_dirs):
        self.own = Own(framework_dirs)
        self.keys, self.by_site = {}, {}  # id of a frame dict -> its key; key -> [blocks, bytes]

    def site(self, frames):
        """(file, line, function) of the first own frame, innermost first; else the innermost.
        PyTorch shares one dict per distinct frame among its stacks: keys are cached by the
        frame's identity, which holds while the snapshot is summarised."""
        own, chosen = self.own, frames[0]
        for frame in frames:
            if own[frame["filename"]]:
                chosen = frame
                break
        return self.keys.get(id(chosen)) or self.key(chosen)

    def key(self, frame):
        key = self.keys[id(frame)] = site_key(frame)
        return key

    def add(self, key, blocks, size):
        entry = self.by_site.get(key)
        if entry is None:
            self.by_site[key] = [blocks, size]
        else:
            entry[0] += blocks
            entry[1] += size

    def top(self, n):
        ranked = sorted(self.by_site.items(), key=lambda kv: (-kv[1][1], kv[0]))[:n]
        return [{"file": f, "line": line, "function": fn, "blocks": b, "bytes": s}
                for (f, line, fn), (b, s) in ranked]


def site_key(frame):
    return (clip(frame.get("filename"), 256), num(frame.get("line")) or 0,
            clip(frame.get("name"), 128))


def own_frame(frames, own, skips):
    """The first frame of the job's own code in a stack whose innermost frame is not (else the
    innermost). ``skips`` keeps, by the innermost frame's id, the runs of frames before the first
    own one in earlier stacks (the whole stack when it had none), the longest first, a few each:
    a stack that starts with one is settled by one list comparison, at C speed (it tries identity
    first, and PyTorch shares frame dicts between stacks; equal frames have equal file names)."""
    known, start = skips.get(id(frames[0])), 0
    for skipped in known or ():
        k = len(skipped)
        if frames[:k] == skipped:
            if k == len(frames):
                return frames[0]
            if own[frames[k]["filename"]]:
                return frames[k]
            start = k + 1  # a longer run of frames not the job's: look on from there
            break
    for k in range(start, len(frames)):
        if own[frames[k]["filename"]]:
            frame = frames[k]
            break
    else:
        k, frame = len(frames), frames[0]
    if known is None and len(skips) < MAX_SKIPS:  # bounded: unshared frames are all new
        known = skips[id(frames[0])] = []
    if known is not None and len(known) < 4:
        known.append(frames[:k])
        known.sort(key=len, reverse=True)
    return frame
