"""Synthetic PyTorch snapshots (``torch.cuda.memory._snapshot()["segments"]``) shaped like real
ones, for the map summary's equivalence test and scripts/bench_map_summary.py.

``small_tensors`` lays out what scripts/gpu/memory_map_check.py's cost_map job leaves behind on
an H100 (torch 2.11): 50,000 tensors of 4-7 KiB in the small pool's 2 MiB segments, every third
one freed, about 50,100 blocks in about 140 segments. Block and segment dicts carry exactly the
keys torch 2.11 gives them. With ``frames`` each allocated block has its own list of frame dicts,
innermost first, the dicts shared between stacks as torch's symbolizer shares them."""

import os

SMALL_SEGMENT = 2 << 20
TORCH_DIR = "/opt/venv/lib/python3.12/site-packages/torch"
JOB = "/home/u/train.py"


def stacks(kind):
    """Distinct stacks, innermost first, built from shared frame dicts: ``job`` the one line of
    the job that allocated (as cost_map's list comprehension); ``deep`` 40 stacks of a model's
    forward: most with 12 frames of torch's modules before the job's line, some with 8, some
    with none of the job's (the innermost frame is then the site), some starting in the
    standard library."""
    if kind == "job":
        return [[{"filename": JOB, "line": 52, "name": "<module>"}]]
    torch_frames = [{"filename": TORCH_DIR + "/nn/modules/module.py", "line": 1750 + k,
                     "name": "_call_impl"} for k in range(12)]
    stdlib = {"filename": os.path.join(os.path.dirname(os.__file__), "contextlib.py"),
              "line": 81, "name": "inner"}
    main = {"filename": JOB, "line": 200, "name": "main"}
    out = []
    for s in range(40):
        step = {"filename": JOB, "line": 80 + s, "name": "step"}
        out.append([torch_frames[:8] + [step, main], torch_frames, [stdlib, step, main],
                    torch_frames + [step, main]][min(s % 8, 3)])
    return out


def small_tensors(tensors=50000, frames=None, freed_every=3, base=0x7F4400000000):
    """Segments as torch gives them; ``frames`` None (no recording), ``"job"`` or ``"deep"``."""
    shared = stacks(frames) if frames else None
    segments, blocks, used, address, n = [], [], 0, base, 0

    def close():
        nonlocal blocks, used, address, n
        if used < SMALL_SEGMENT:
            blocks.append(_block(address + used, SMALL_SEGMENT - used, "inactive", None))
        segments.append(_segment(address, SMALL_SEGMENT, blocks, "small", n))
        # segments are not contiguous: every seventh leaves a gap of one segment
        address += SMALL_SEGMENT * (2 if n % 7 == 6 else 1)
        blocks, used, n = [], 0, n + 1

    for k in range(tensors):
        size = 4096 + 512 * (k % 7)
        if used + size > SMALL_SEGMENT:
            close()
        stack = list(shared[k % len(shared)]) if shared else None
        state = "inactive" if k % freed_every == 0 else "active_allocated"
        blocks.append(_block(address + used, size, state, stack))
        used += size
    close()
    for seg in segments:
        _merge_free(seg)
    return segments


def _block(address, size, state, stack):
    return {"address": address, "size": size, "requested_size": size, "state": state,
            "frames": stack if stack and state == "active_allocated" else []}


def _segment(address, total, blocks, kind, n):
    return {"address": address, "total_size": total, "allocated_size": 0, "active_size": 0,
            "requested_size": 0, "stream": 0, "segment_type": kind, "segment_pool_id": (0, 0),
            "is_expandable": False, "device": 0, "frames": [], "blocks": blocks}


def _merge_free(seg):
    """Adjacent free blocks merge, as the allocator merges them; the segment's figures follow."""
    merged = []
    for b in seg["blocks"]:
        if merged and b["state"] == "inactive" and merged[-1]["state"] == "inactive":
            merged[-1]["size"] += b["size"]
            merged[-1]["requested_size"] = 0
        else:
            if b["state"] == "inactive":
                b["requested_size"] = 0
            merged.append(b)
    seg["blocks"] = merged
    live = [b for b in merged if b["state"] != "inactive"]
    seg["allocated_size"] = seg["active_size"] = sum(b["size"] for b in live)
    seg["requested_size"] = sum(b["requested_size"] for b in live)
