"""Turns the real pool maps captured on a GPU machine (scripts/gpu/capture_pool_maps.py) into the
probe's test fixtures: PyTorch snapshots as gzipped JSON without their history (device_traces
emptied: the map reads segments only), the JAX profile as it is.

Usage: python3 scripts/trim_pool_maps.py CAPTURE_DIR tests/fixtures/probe-maps
(the pickles are files this project captured itself; nothing else should be unpickled)"""
import gzip
import json
import os
import pickle
import shutil
import sys


def trimmed(snapshot):
    return {"segments": snapshot["segments"],
            "device_traces": [[] for _ in snapshot.get("device_traces") or []]}


def write(path, doc):
    with gzip.open(path, "wt", compresslevel=9) as f:
        json.dump(doc, f, separators=(",", ":"))


def main():
    src, dst = sys.argv[1], sys.argv[2]
    os.makedirs(dst, exist_ok=True)

    def load(name):
        with open(os.path.join(src, name), "rb") as f:
            return pickle.load(f)

    def load_json(name):
        with open(os.path.join(src, name)) as f:
            return json.load(f)

    if os.path.exists(os.path.join(src, "torch-frag.pickle")):
        write(os.path.join(dst, "torch-frag.json.gz"),
              {"snapshot": trimmed(load("torch-frag.pickle")),
               "stats": load_json("torch-frag-stats.json")})
    if os.path.exists(os.path.join(src, "torch-oom.pickle")):
        oom = load_json("torch-oom.json")
        oom.pop("stats", None)
        write(os.path.join(dst, "torch-oom.json.gz"),
              {"snapshot": trimmed(load("torch-oom.pickle")), "observer": oom})
    if os.path.exists(os.path.join(src, "torch-history.pickle")):
        write(os.path.join(dst, "torch-history.json.gz"),
              {"snapshot": trimmed(load("torch-history.pickle"))})
    for name in ("jax-profile.pb.gz", "jax-live.json", "torch-50k.json"):
        if os.path.exists(os.path.join(src, name)):
            shutil.copyfile(os.path.join(src, name), os.path.join(dst, name))
    for name in sorted(os.listdir(dst)):
        print("%-24s %8d bytes" % (name, os.path.getsize(os.path.join(dst, name))))


if __name__ == "__main__":
    main()
