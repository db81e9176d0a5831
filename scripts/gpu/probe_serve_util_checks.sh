#!/usr/bin/env bash
# Checks on a real GPU, one run: the allocator probe against the frameworks'
# own figures (probe_check.sh), `gpumon serve` against nvidia-smi, per-process utilisation
# against `nvidia-smi pmon`, an OOM'd process kept on screen (tmux), the probe's overhead, and the
# demo recorded anew with the probe. Usage (repo root, target/release/gpumon):
# bash scripts/gpu/probe_serve_util_checks.sh OUT (results kept in tests/fixtures/gpu/probe-serve-wheel-checks/)
set -u
export PYTHONDONTWRITEBYTECODE=1  # python run in place leaves no __pycache__ in the checkout
export PYTHONUNBUFFERED=1
o=$1; here=$PWD/scripts/gpu; bin=$PWD/target/release/gpumon
mkdir -p "$o"
{ nvidia-smi -L; "$bin" --version; python3 -c 'import torch, jax, cupy; print(torch.__version__, jax.__version__, cupy.__version__)'; } >"$o/versions.txt" 2>&1

echo "== probe"; PROBE_S=45 bash "$here/probe_check.sh" "$o/probe" >"$o/probe.txt" 2>&1; tail -40 "$o/probe.txt"

echo "== serve"
( eval "$("$bin" probe env)"; GROW_GIB=3 HOLD_S=25 python3 "$here/torch_frag.py" grow >/tmp/grow.log 2>&1 ) &
"$bin" serve --listen 127.0.0.1:9477 2>"$o/serve.err" & srv=$!
sleep 15
python3 "$here/serve_verify.py" http://127.0.0.1:9477 >"$o/serve.txt" 2>&1; cat "$o/serve.txt"
python3 -c 'import urllib.request as u; print(u.urlopen("http://127.0.0.1:9477/metrics").read().decode())' >"$o/metrics.txt"
echo "== util"
STEPS=200000 python3 "$here/probe_jobs.py" torch-steps >/dev/null 2>&1 & job=$!
sleep 8
nvidia-smi pmon -c 1 -s u >"$o/pmon.txt" 2>&1
"$bin" snapshot --format json >"$o/util-snapshot.json" 2>&1
nvidia-smi pmon -c 1 -s u >>"$o/pmon.txt" 2>&1
kill $job; wait $job 2>/dev/null; kill $srv; wait
cat "$o/pmon.txt"; python3 -c '
import json,sys; d=json.load(open(sys.argv[1]))
for p in d["processes"]: print("gpumon util", p["pid"], p.get("util"), p.get("unavailable",{}).get("util"))' "$o/util-snapshot.json"

echo "== OOM kept on screen"
tmux new-session -d -s g -x 160 -y 50 "$bin --keep-exited 5m"
sleep 3
python3 "$here/torch_frag.py" fraction >/tmp/frag.log 2>&1
sleep 3; tmux send-keys -t g a; sleep 1; tmux send-keys -t g Enter; sleep 2
tmux capture-pane -p -t g >"$o/oom-screen.txt"; tmux send-keys -t g q; cat "$o/oom-screen.txt"

echo "== overhead"; bash scripts/bench_probe_overhead.sh 5 >"$o/overhead.txt" 2>&1; tail -3 "$o/overhead.txt"
echo "== demo"; DEMO_S=110 bash "$here/record_demo.sh" "$o/demo" >"$o/demo.txt" 2>&1; ls -la "$o/demo"; cat "$o/demo/record.err"
