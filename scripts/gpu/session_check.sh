#!/usr/bin/env bash
# One GPU-machine session: record the demo with real workloads, and meanwhile check gpumon's numbers
# against nvidia-smi and /proc and capture its screen in tmux at 80x24 and 120x40.
# Usage (repo root, target/release/gpumon built): bash scripts/gpu/session_check.sh OUTDIR
set -u
export PYTHONDONTWRITEBYTECODE=1  # python run in place leaves no __pycache__ in the checkout
o=$1; mkdir -p "$o"; bin=$PWD/target/release/gpumon
DEMO_S=${DEMO_S:-120} bash scripts/gpu/record_demo.sh "$o/demo" &
demo=$!
sleep 85
for size in 80x24 120x40; do
  tmux new-session -d -s "g$size" -x "${size%x*}" -y "${size#*x}" -e LANG=C.UTF-8 "$bin"
  sleep 4
  tmux capture-pane -p -t "g$size" > "$o/screen-$size.txt"
  tmux send-keys -t "g$size" q
done
python3 scripts/gpu/verify_numbers.py "$o/demo/demo.ndjson" > "$o/verify.txt" 2>&1
"$bin" snapshot -o "$o/snapshot.json" 2>>"$o/verify.txt"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv >> "$o/verify.txt"
wait $demo
cat "$o/verify.txt" "$o"/screen-*.txt
