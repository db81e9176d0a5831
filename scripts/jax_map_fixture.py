#!/usr/bin/env python3
"""A `gpumon.map/1` JAX map, as the probe writes one, from the real JAX capture of the H100
(tests/fixtures/probe-maps/jax-live.json: `Device.memory_stats()` of jax 0.11.2 with no
preallocation, and jax-profile.pb.gz: its device memory profile). Derived, not captured: the
device entry is built by the probe's own code (`_map_device`, the fields `_map_jax` sets, the
sites `_profile_sites` reads from the real profile) and written by its own encoder (`_encode`),
so it carries what the probe writes for a pool with no block map, `segments_total` null among
them (the field a JAX job's map once had refused by gpumon's reader). Needs no JAX.

    scripts/jax_map_fixture.py OUT.map.json [--pid N] [--start-time S] [--at-ms T]
        [--request-id ID]
"""
import argparse
import importlib.util
import json
import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIVE = os.path.join(REPO, "tests", "fixtures", "probe-maps", "jax-live.json")
PROFILE = os.path.join(REPO, "tests", "fixtures", "probe-maps", "jax-profile.pb.gz")
HOOK = os.path.join(REPO, "python", "gpumon", "probe", "sitecustomize.py")
UUID = "GPU-d6861c89-f7b1-48b5-33c5-2aedaa30fb52"  # the H100 of the corpus recordings


def hook():
    spec = importlib.util.spec_from_file_location("gpumon_probe_hook", HOOK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines its functions; the probe only starts from site
    return module


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--pid", type=int, default=598)
    ap.add_argument("--start-time", type=int, default=1795540000)
    ap.add_argument("--at-ms", type=int, default=1795540030000)
    ap.add_argument("--request-id", type=int, default=None)
    a = ap.parse_args()
    h = hook()
    stats = json.load(open(LIVE))["stats"]
    allocated = stats["bytes_in_use"]
    reserved = stats.get("pool_bytes", stats.get("bytes_reserved"))
    dev = h._map_device(0, UUID)
    # What _map_jax sets from _read_jax's figures (cached_free = reserved - allocated).
    dev.update(allocated=allocated, reserved=reserved, free=reserved - allocated,
               largest_free=stats["largest_free_block_bytes"],
               segments_reason="JAX's allocator gives no block map",
               sites_reason="jax.profiler is not loaded")
    with open(PROFILE, "rb") as f:
        h._profile_sites(f.read(), {0: dev}, ["/opt/torch/.venv/lib/python3.12/site-packages"])
    doc = {"schema": "gpumon.map/1", "pid": a.pid, "start_time": a.start_time, "at_ms": a.at_ms,
           "reason": "request", "request_id": a.request_id, "took_us": 2143, "oom": None,
           "frameworks": [{"name": "jax", "version": "0.11.2", "error": None, "devices": [dev]}]}
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        f.write(h._encode(doc))
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
