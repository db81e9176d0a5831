#!/usr/bin/env bash
# Block maps on a real GPU (issue 26), gpumon's side, once the probe's side is merged:
#  1. a PyTorch fragmentation OOM (torch_frag.py holes) started recording allocation history
#     (`gpumon probe env --record-allocations`) while `gpumon record` samples: the recording must
#     hold a map with reason "oom", and `gpumon explain` its "at the failure:" line;
#  2. a live job (torch_frag.py grow): `gpumon snapshot --export PID -o FILE` moves PyTorch's
#     snapshot pickle out (0600), which loads in Python with the keys `segments`, `device_traces`;
#     `gpumon snapshot` then carries its map, whose allocated and reserved bytes equal the probe's
#     memory_stats figures once the job holds still;
#  3. gpumon's peak RSS while showing the largest map (scripts/map_rss.py on the release binary).
# Usage (repo root, target/release/gpumon built): bash scripts/gpu/map_check.sh OUTDIR  (~2 min)
set -u
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
here=$(cd "$(dirname "$0")" && pwd); bin=$PWD/target/release/gpumon; o=$1
mkdir -p "$o"
eval "$("$bin" probe env --interval 250ms --record-allocations)" || exit 1
env | grep '^GPUMON_PROBE_RECORD' >"$o/env.txt"

# 1. The OOM's map in a recording, and in explain.
"$bin" record "$o/oom.ndjson" --duration 40s --interval 500ms 2>"$o/record.err" &
rec=$!
sleep 2
HOLD_S=4 python3 "$here/torch_frag.py" holes >"$o/oom.log" 2>"$o/oom.err"
echo "holes job exit $?" >>"$o/jobs.txt"
wait $rec
"$bin" explain "$o/oom.ndjson" >"$o/explain.txt" 2>&1
python3 - "$o/oom.ndjson" >"$o/oom-maps.txt" <<'PY'
import json, sys
for line in open(sys.argv[1]).read().splitlines()[1:]:
    for n in json.loads(line).get("probes", []):
        m = n.get("map")
        if m:
            d = m["frameworks"][0]["devices"][0]
            print(m["reason"], "oom", m.get("oom"), "free", d["free"], "largest", d["largest_free"],
                  "holes", d["holes"], "sites", [(s["file"], s["line"], s["bytes"]) for s in (d["sites"] or [])][:3],
                  "took_us", m["took_us"])
PY

# 2. Export and snapshot of a live job.
# (without recording: this job sleeps in one C call while it holds, and while PyTorch records
# history only the job's main thread takes snapshots; history_maps_check.py covers that case)
GROW_GIB=2 HOLD_S=40 env -u GPUMON_PROBE_RECORD python3 "$here/torch_frag.py" grow >"$o/grow.log" 2>&1 &
job=$!
sleep 22
"$bin" snapshot --export "$job" -o "$o/grow.pickle" 2>"$o/export.err"; echo "export exit $?" >>"$o/jobs.txt"
stat -c '%a %s %n' "$o/grow.pickle" >>"$o/jobs.txt" 2>&1
python3 - "$o/grow.pickle" >>"$o/jobs.txt" 2>&1 <<'PY'
import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
print("pickle keys", sorted(d), "segments", len(d["segments"]), "has device_traces", "device_traces" in d)
PY
"$bin" snapshot -o "$o/snapshot.json" 2>>"$o/jobs.txt"
"$bin" snapshot --format text -o "$o/snapshot.txt" 2>>"$o/jobs.txt"
python3 - "$o/snapshot.json" "$job" >>"$o/jobs.txt" 2>&1 <<'PY'
import json, sys
s, pid = json.load(open(sys.argv[1])), int(sys.argv[2])
pool = [p["pool"] for p in s["processes"] if p["pid"] == pid and p.get("pool")]
maps = [m for m in s.get("maps", []) if m["pid"] == pid]
print("maps for the job:", len(maps), [m["fits"] for m in maps])
if maps and pool:
    d = maps[0]["map"]["frameworks"][0]["devices"][0]
    print("map allocated", d["allocated"], "reserved", d["reserved"], "free", d["free"],
          "| probe allocated", pool[0]["allocated"], "reserved", pool[0]["reserved"])
PY
kill $job 2>/dev/null; wait $job 2>/dev/null

# 3. gpumon's memory with the largest map.
python3 scripts/map_rss.py "$bin" "$o" >"$o/rss.txt" 2>&1; echo "map_rss exit $?" >>"$o/jobs.txt"

cat "$o/env.txt" "$o/jobs.txt" "$o/oom-maps.txt" "$o/rss.txt"
echo "--- explain (the map at the failure):"; grep -A2 "at the failure" "$o/explain.txt" | head -20
