#!/usr/bin/env bash
# Round 4 (issue 18) on one GPU machine, about 7 minutes: one busy PyTorch job with the allocator
# probe runs throughout; (1) where gpumon's tick goes (GPUMON_TICK_TIMES) in a 120x40 screen and in
# `serve`; (2) the screen against nvtop and nvitop, each alone in a 120x40 pty at a 1 s refresh,
# in both orders; (3) `gpumon serve` against nvitop-exporter, each scraped every second, both
# orders. Expects, carried: target/release/gpumon, optionally more builds as target/gpumon-*
# (compared too), and target/gpu-assets/{deb/nvtop_*.deb,whl/*.whl} (nvitop, nvitop-exporter,
# prometheus-client). Usage: bash scripts/gpu/round4_perf.sh OUT   (SECONDS_EACH=20 by default)
set -u
export PYTHONUNBUFFERED=1 LANG=C.UTF-8
o=$1; mkdir -p "$o"; o=$(cd "$o" && pwd); here=$PWD/scripts/gpu; bin=$PWD/target/release/gpumon
each=${SECONDS_EACH:-20}
mkdir -p /tmp/nvtop && dpkg -x target/gpu-assets/deb/nvtop_*.deb /tmp/nvtop; nvtop=/tmp/nvtop/usr/bin/nvtop
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site target/gpu-assets/whl/*.whl
{ nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader
  nproc; uname -r; ls -l "$bin" target/gpumon-* 2>/dev/null; } | tee "$o/machine.txt"

# The job: matrix products back to back, probed (its pool figures in a probe file every second).
( eval "$("$bin" probe env --probe-dir /tmp/r4probe/probes)"; BUSY_S=900 exec python3 "$here/torch_frag.py" busy ) \
  > "$o/busy.log" 2>&1 &
busy=$!
trap 'kill $busy 2>/dev/null; tmux kill-session -t r4 2>/dev/null' EXIT
sleep 12
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | tee "$o/apps.txt"
ls -l /tmp/r4probe/probes | tee -a "$o/apps.txt"
# gpumon's own reading of the same moment, to hold against nvidia-smi's (to the MiB).
GPUMON_PROBE_DIR=/tmp/r4probe/probes "$bin" snapshot --format text > "$o/snapshot.txt" 2>&1
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader >> "$o/apps.txt"

echo "== (1) tick breakdown: the screen, 30 s"
tmux new-session -d -s r4 -x 120 -y 40 -e LANG=C.UTF-8 \
  "GPUMON_TICK_TIMES=$o/ticks-screen.txt GPUMON_PROBE_DIR=/tmp/r4probe/probes $bin --interval 1s"
sleep 30
tmux capture-pane -p -t r4 > "$o/screen.txt"
pid=$(tmux display -p -t r4 '#{pane_pid}')
{ grep -E 'VmHWM|VmRSS' /proc/$pid/status; echo "threads: $(ls /proc/$pid/task | wc -l)"; } > "$o/screen-proc.txt"
tmux kill-session -t r4; sleep 1
cat "$o/ticks-screen.txt" "$o/screen-proc.txt"; head -12 "$o/screen.txt"

echo "== (2) the screen against nvtop and nvitop, both orders, ${each} s each"
tools=("gpumon=env GPUMON_PROBE_DIR=/tmp/r4probe/probes $bin --interval 1s")
for b in target/gpumon-*; do [ -x "$b" ] && tools+=("$(basename "$b")=env GPUMON_PROBE_DIR=/tmp/r4probe/probes $PWD/$b --interval 1s"); done
PYTHONPATH=/tmp/site python3 scripts/bench_vs_rivals.py --load 0 --both-orders --seconds "$each" \
  "${tools[@]}" "nvtop=$nvtop -d 10" "nvitop=python3 -m nvitop --interval 1" | tee "$o/rivals.txt"

echo "== (3) serve against nvitop-exporter, scraped every second, both orders, ${each} s each"
PYTHONPATH=/tmp/site python3 scripts/bench_vs_rivals.py --serve --load 0 --both-orders --seconds "$each" \
  "gpumon-serve=http://127.0.0.1:9477/metrics=env GPUMON_TICK_TIMES=$o/ticks-serve.txt GPUMON_PROBE_DIR=/tmp/r4probe/probes $bin serve --listen 127.0.0.1:9477" \
  "nvitop-exporter=http://127.0.0.1:8000/metrics=python3 -m nvitop_exporter --bind-address 127.0.0.1 --port 8000 --interval 1" \
  | tee "$o/serve.txt"
cat "$o/ticks-serve.txt"
kill $busy 2>/dev/null; wait $busy 2>/dev/null
tail -3 "$o/busy.log"
