#!/usr/bin/env python3
"""Test fixtures from real PyTorch snapshots: summarises a `torch.cuda.memory._snapshot()` pickle
(saved on the H100 by scripts/gpu/capture_pool_maps.py) into a `gpumon.map/1` document as
docs/memory-map-format.md describes it (runs of like blocks, holes by size, sites from frames),
so gpumon's reader, model and screen are tested on real pools. The probe does this summary in the
job; this copy only makes fixtures, and needs no torch (the pickle holds plain Python values).

    scripts/map_fixture.py SNAPSHOT.pickle OUT.map.json [--oom OOM.json] [--pid N]
"""

import argparse
import json
import pickle

MIB = 1 << 20
BUCKETS = [MIB, 8 * MIB, 64 * MIB, 512 * MIB, None]
OWN_RUN = 64 * MIB
SKIP = ("/site-packages/", "/dist-packages/", "/lib/python3", "<frozen")


def state(b):
    s = b["state"]
    if s == "active_allocated":
        return "a"
    if s == "active_pending_free":
        return "p"
    return "f"


def site_of(frames):
    if not frames:
        return None
    for f in frames:
        if not any(x in f["filename"] for x in SKIP):
            return f
    return frames[0]


def add(sites, b):
    f = site_of(b.get("frames") or [])
    if f is None:
        return False
    key = (f["filename"][:256], f["line"], f["name"][:128])
    blocks, size = sites.get(key, (0, 0))
    sites[key] = (blocks + 1, size + b["size"])
    return True


def listed(sites, n):
    rows = sorted(sites.items(), key=lambda kv: -kv[1][1])[:n]
    return [{"file": k[0], "line": k[1], "function": k[2], "blocks": v[0], "bytes": v[1]} for k, v in rows]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("snapshot")
    ap.add_argument("out")
    ap.add_argument("--oom")
    ap.add_argument("--pid", type=int, default=4242)
    a = ap.parse_args()
    snap = pickle.load(open(a.snapshot, "rb"))
    segments, holes = [], [[u, 0, 0] for u in BUCKETS]
    sites, stranding = {}, {}
    allocated = free = reserved = largest = 0
    unattributed = [0, 0]
    for seg in sorted(snap["segments"], key=lambda s: s["address"]):
        runs = []
        has_free = any(state(b) == "f" for b in seg["blocks"])
        for b in seg["blocks"]:
            st, size = state(b), b["size"]
            if st == "a":
                allocated += size
                if not add(sites, b):
                    unattributed[0] += 1
                    unattributed[1] += size
                if has_free:
                    add(stranding, b)
            if st == "f":
                free += size
                largest = max(largest, size)
                i = next(i for i, u in enumerate(BUCKETS) if u is None or size < u)
                holes[i][1] += 1
                holes[i][2] += size
            if runs and runs[-1][0] == st and size < OWN_RUN and runs[-1][3] < OWN_RUN:
                runs[-1][1] += 1
                runs[-1][2] += size
                runs[-1][3] = max(runs[-1][3], size)
            else:
                runs.append([st, 1, size, size])
        reserved += seg["total_size"]
        segments.append({
            "address": seg["address"], "size": seg["total_size"], "kind": seg["segment_type"],
            "expandable": bool(seg.get("is_expandable")),
            "private": tuple(seg.get("segment_pool_id", (0, 0))) != (0, 0),
            "stream": seg["stream"], "runs": runs,
        })
    recorded = any(b.get("frames") for s in snap["segments"] for b in s["blocks"])
    oom = None
    if a.oom:
        args = json.load(open(a.oom))["args"]
        oom = {"device": args[0], "request": args[1], "device_allocated": args[2], "device_free": args[3]}
    device = {
        "index": 0, "uuid": None, "allocated": allocated, "reserved": reserved, "free": free,
        "largest_free": largest, "holes": holes, "segments": segments, "segments_reason": None,
        "segments_total": len(segments), "elided": None,
        "sites": listed(sites, 20) if recorded else None,
        "sites_reason": None if recorded else "allocation history is not being recorded",
        "stranding_sites": listed(stranding, 5) if recorded else None,
        "unattributed": {"blocks": unattributed[0], "bytes": unattributed[1]},
        "shapes": None, "free_blocks": None,
    }
    doc = {"schema": "gpumon.map/1", "pid": a.pid, "start_time": 1763800000 + a.pid,
           "at_ms": 1763800100000, "reason": "oom" if oom else "request", "request_id": None,
           "took_us": 1019, "oom": oom,
           "frameworks": [{"name": "pytorch", "version": "2.11.0", "error": None, "devices": [device]}]}
    with open(a.out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
