"""Compares what gpumon recorded from the allocator probe with what the jobs printed of their own
pool statistics (scripts/gpu/probe_jobs.py), at the nearest moment (within one interval).

usage: python3 probe_verify.py RECORDING JOB_LOG...
Prints one line per comparison kind and a summary: `probe: N equal to the MiB, M differ`.
"""
import json, sys

MiB = 2**20
rec, logs = sys.argv[1], sys.argv[2:]

pools = {}  # pid -> [(at_ms, pool, gpu_uuid)]
alerts = []
with open(rec) as f:
    header = json.loads(f.readline())
    for line in f:
        s = json.loads(line)
        for p in s.get("processes", []):
            if p.get("pool"):
                pools.setdefault(p["pid"], []).append((p["pool"]["at_ms"], p["pool"], p["gpu_uuid"]))

# Which job keys map to which pool fields, per framework.
MAP = {
    "pytorch": [("allocated_bytes.all.current", "allocated"), ("reserved_bytes.all.current", "reserved"),
                ("inactive_split_bytes.all.current", "stranded"), ("num_alloc_retries", "alloc_retries"),
                ("num_ooms", "ooms")],
    "jax": [("bytes_in_use", "allocated"), ("pool_bytes", "reserved"), ("largest_free_block_bytes", "largest_free_block"),
            ("bytes_limit", "limit")],
    "cupy": [("used", "allocated"), ("total", "reserved"), ("free", "cached_free"), ("limit", "limit")],
}

equal = differ = 0
for path in logs:
    lines = []
    with open(path) as f:
        for l in f:
            l = l.strip()
            if l.startswith("{") and '"stats"' in l:
                lines.append(json.loads(l))
    if not lines:
        continue
    pid = lines[0]["pid"]
    seen = pools.get(pid, [])
    print(f"{path}: pid {pid}: {len(lines)} job lines, {len(seen)} probe samples recorded by gpumon"
          + (f" on {seen[0][2]}" if seen else ""))
    window = int(header.get("interval_ms", 1000))
    for at_ms, pool, _ in seen:
        # The job's own lines within one interval of when the probe read the figures: the
        # figures must equal one of them (the job may have changed its pool in between).
        near = [j for j in lines if abs(j["t"] * 1000 - at_ms) <= window]
        if not near:
            continue
        fw = pool["framework"]
        for jk, pk in MAP.get(fw, []):
            pv = pool.get(pk)
            values = [j["stats"].get(jk) for j in near if j["stats"].get(jk) is not None]
            if pv is None or not values or (jk == "limit" and 0 in values):
                continue
            scale = MiB if "bytes" in jk or jk in ("used", "total", "free", "limit") else 1
            if any(jv // scale == pv // scale for jv in values):
                equal += 1
            else:
                differ += 1
                print(f"  differ at {at_ms}: {fw} {jk} in {values} vs gpumon {pk}={pv}")
    last = seen[-1][1] if seen else None
    if last:
        shown = {k: v for k, v in last.items() if v is not None and k not in ("framework", "version", "at_ms")}
        print(f"  last probe figures: {json.dumps(shown)}")
print(f"probe: {equal} equal to the MiB, {differ} differ")
