#!/usr/bin/env bash
# A leak alert names the line of code whose memory climbs, end to end on a GPU (issue 26):
# `gpumon serve` watches the corpus's gpt2-leak job (GPT-2 small under a 9.5 GiB cap, keeping
# every step's logits, paced to reach the cap in LEAK_S=90 s) started with
# `gpumon probe env --record-allocations`. During the leak alert gpumon asks the job's probe for
# a map at most every 30 s (taken in the job's main thread, since the job records history); once
# two maps show it, a `leak-site` finding names the site whose bytes climb. Every 3 s this script
# keeps /snapshot's alerts; at the end it prints each alert once (time, level, class, title, the
# first two evidence lines), and the job's exit status and last lines.
# Usage (repo root, target/release/gpumon built): bash scripts/gpu/leak_site_check.sh OUTDIR (~2.5 min)
set -u
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
bin=$PWD/target/release/gpumon; o=$1; port=19477
mkdir -p "$o"
eval "$("$bin" probe env --interval 500ms --record-allocations)" || exit 1
"$bin" serve --listen 127.0.0.1:$port --interval 500ms 2>"$o/serve.err" &
serve=$!
(cd scripts/gpu/workloads && CAP_GIB=9.5 LEAK_S=90 exec python3 lm.py gpt2-leak) \
  >"$o/job.out" 2>"$o/job.err" &
job=$!
python3 - "$port" "$job" "$o/alerts.json" <<'PY'
import json, os, sys, time, urllib.request
port, job, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
seen, end = {}, time.time() + 200
def alive():
    try:
        os.kill(job, 0)
        with open(f"/proc/{job}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False
gone_at = None
while time.time() < end:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/snapshot?tiers=0", timeout=5) as r:
            doc = json.load(r)
        for a in doc.get("alerts", []):
            seen.setdefault((a.get("at"), a.get("class"), a.get("pid")), a)
    except OSError:
        pass
    if not alive():
        gone_at = gone_at or time.time()
        if time.time() - gone_at > 8:
            break
    time.sleep(3)
alerts = sorted(seen.values(), key=lambda a: str(a.get("at")))
json.dump(alerts, open(out, "w"), indent=1)
for a in alerts:
    print(a.get("at"), a.get("level"), a.get("class"), a.get("pid"), "|", a.get("title"))
    for e in (a.get("evidence") or [])[:2]:
        print("    -", e)
PY
wait $job; echo "job exit $?"
kill $serve; wait $serve 2>/dev/null
grep -n "keep.append\|out = model" scripts/gpu/workloads/lm.py
tail -3 "$o/job.err"
