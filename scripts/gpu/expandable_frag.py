"""Checks on a GPU what gpumon's expandable-segments rule assumes (issue 27), in about 10 s.

Usage: python3 scripts/gpu/expandable_frag.py OUT_DIR
Sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True itself (before importing torch), caps the
process at 7 GiB, fills it with 8 MiB tensors, frees every other one, and records in
OUT_DIR/expandable_frag.json, at each stage: memory_stats() (allocated, reserved,
inactive_split_bytes, num_alloc_retries), what memory_snapshot() says (the largest inactive block,
how many blocks and segments, and how long the call and the walk took: the probe gives the
snapshot up above 20 ms and slows it above 2 ms), then whether a 1 GiB request fails and with
what message, and what empty_cache() gives back. Expected: inactive_split_bytes 0 while
reserved - allocated is GiBs, the largest inactive block 8 MiB, the 1 GiB request refused.
Needs torch with CUDA; changes no GPU setting; allocates at most 7 GiB on GPU 0.
"""
import json
import os
import sys
import time

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"

import torch  # noqa: E402

MiB, GiB = 1 << 20, 1 << 30
CAP = 7 * GiB


def stats():
    s = torch.cuda.memory_stats()
    return {k: s.get(k) for k in ("allocated_bytes.all.current", "reserved_bytes.all.current",
                                  "inactive_split_bytes.all.current", "num_alloc_retries",
                                  "num_ooms")}


def snapshot():
    began = time.perf_counter()
    segments = torch.cuda.memory_snapshot()
    largest, blocks, inactive = 0, 0, 0
    for seg in segments:
        for b in seg.get("blocks", ()):
            blocks += 1
            if b.get("state") == "inactive":
                inactive += b.get("size") or 0
                largest = max(largest, b.get("size") or 0)
    took = time.perf_counter() - began
    return {"segments": len(segments), "blocks": blocks, "inactive_bytes": inactive,
            "largest_inactive": largest, "took_ms": round(took * 1000, 3),
            "expandable": [bool(s.get("is_expandable")) for s in segments][:4]}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(CAP / total)
    report = {"torch": torch.__version__, "conf": os.environ["PYTORCH_CUDA_ALLOC_CONF"],
              "cap": CAP, "stages": []}
    kept = []
    try:
        while torch.cuda.memory_reserved() + 8 * MiB <= CAP - 64 * MiB:
            kept.append(torch.empty(8 * MiB, dtype=torch.uint8, device="cuda"))
    except torch.OutOfMemoryError as e:
        report["fill_stopped_by"] = str(e).splitlines()[0][:300]
    torch.cuda.synchronize()
    report["stages"].append({"stage": "filled", "tensors": len(kept), **stats(),
                             "snapshot": snapshot()})
    del kept[::2]
    torch.cuda.synchronize()
    report["stages"].append({"stage": "every other freed", "tensors": len(kept), **stats(),
                             "snapshot": snapshot()})
    try:
        big = torch.empty(GiB, dtype=torch.uint8, device="cuda")
        report["request_1gib"] = "fitted"
        del big
    except torch.OutOfMemoryError as e:
        report["request_1gib"] = str(e)[:600]
    report["stages"].append({"stage": "after the 1 GiB request", **stats(),
                             "snapshot": snapshot()})
    torch.cuda.empty_cache()
    report["stages"].append({"stage": "after empty_cache", **stats(), "snapshot": snapshot()})
    with open(os.path.join(out, "expandable_frag.json"), "w") as f:
        json.dump(report, f, indent=1)
    for s in report["stages"]:
        print(f"{s['stage']:26} allocated {s['allocated_bytes.all.current'] / GiB:6.2f} GiB  "
              f"reserved {s['reserved_bytes.all.current'] / GiB:6.2f} GiB  inactive_split "
              f"{s['inactive_split_bytes.all.current'] / MiB:8.1f} MiB  largest inactive "
              f"{s['snapshot']['largest_inactive'] / MiB:8.1f} MiB  snapshot "
              f"{s['snapshot']['took_ms']} ms")
    print("1 GiB request:", report["request_1gib"].splitlines()[0][:200])


if __name__ == "__main__":
    main()
