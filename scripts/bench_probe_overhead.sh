#!/usr/bin/env bash
# The allocator probe's cost inside a job: a PyTorch training-step loop timed with and without
# the probe, alternating, in the same run on the same GPU; prints each run and the ratio of the
# medians. Goal: no measurable slowdown (<= 1 %).
# Usage (repo root, target/release/gpumon built, on a GPU machine): bash scripts/bench_probe_overhead.sh [RUNS]
set -eu
export PYTHONDONTWRITEBYTECODE=1  # python run in place leaves no __pycache__ in the checkout
bin=$PWD/target/release/gpumon; runs=${1:-5}; job=$PWD/scripts/gpu/probe_jobs.py
export STEPS=${STEPS:-3000}
probe_env=$("$bin" probe env --interval 1s)
for i in $(seq "$runs"); do
  plain=$(env -u GPUMON_PROBE_DIR python3 "$job" torch-steps | tail -1)
  probed=$(eval "$probe_env"; python3 "$job" torch-steps | tail -1)
  echo "run $i: without $plain  with $probed"
done | tee /dev/stderr | python3 -c '
import json, re, statistics, sys
w, p = [], []
for line in sys.stdin:
    a, b = re.findall(r"\{.*?\}", line)
    w.append(json.loads(a)["s_per_step"]); p.append(json.loads(b)["s_per_step"])
mw, mp = statistics.median(w), statistics.median(p)
print(f"median s/step without {mw*1e3:.4f} ms, with probe {mp*1e3:.4f} ms: ratio {mp/mw:.4f} ({(mp/mw-1)*100:+.2f} %)")
'
