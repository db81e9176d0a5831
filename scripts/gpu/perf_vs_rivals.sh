#!/usr/bin/env bash
# gpumon's cost against nvtop and nvitop (issue 18) on one GPU machine, about 9 minutes at 20 s each: one busy PyTorch job
# with the allocator probe runs throughout; (1) what each NVML call of a tick costs here
# (nvml_call_costs.py); (2) where gpumon's tick goes (GPUMON_TICK_TIMES), 120x40, 30 s, from a
# fresh start and again in the steady state (`--history 10s`: the sparklines' and chart's window
# is full within the warm-up, as it is after ten minutes at the default), and with nothing drawn
# (`reads`: `serve` that nobody scrapes reads the same sources each second and updates its model,
# but draws and encodes nothing); (3) each screen's resident memory by mapping (gpumon builds and
# nvtop); (4) the screens (and nvitop) side by side, each alone in a 120x40 pty at a 1 s refresh,
# both orders, CPU from the scheduler's nanosecond count, each gpumon build from a fresh start and
# in the steady state (NAME-steady), and the unscraped `serve` as gpumon-reads-only, the floor
# under any screen; (5) `serve` against nvitop-exporter, scraped every second, both orders.
# Expects, carried: target/release/gpumon, optionally more builds as target/gpumon-* (compared
# too) and target/floor-* (compared by their reading floor only), and
# target/gpu-assets/{deb/nvtop_*.deb,whl/*.whl}.
# The job: on one GPU (RANKS=1, the default on a 1-GPU machine) the busy PyTorch job; with RANKS=N
# (the default: every GPU NVML lists, when more than one) a healthy N-rank DDP job under torchrun
# (scripts/gpu/dist/ddp_job.py healthy: GPT-2 from its config, needs transformers), one rank a
# GPU, every rank probed: the issue-42 case. Every tool reads every GPU of the machine (NVML is
# not limited by CUDA_VISIBLE_DEVICES), so the 1-GPU case is run on a 1-GPU machine.
# Usage: bash scripts/gpu/perf_vs_rivals.sh OUT   (SECONDS_EACH=30, SERVE_SECONDS=20 by default)
set -u
export PYTHONUNBUFFERED=1 LANG=C.UTF-8
o=$1; mkdir -p "$o"; o=$(cd "$o" && pwd); here=$PWD/scripts/gpu; bin=$PWD/target/release/gpumon
each=${SECONDS_EACH:-30}; serve_each=${SERVE_SECONDS:-20}
mkdir -p /tmp/nvtop && dpkg -x target/gpu-assets/deb/nvtop_*.deb /tmp/nvtop; nvtop=/tmp/nvtop/usr/bin/nvtop
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site target/gpu-assets/whl/*.whl
{ nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader
  nproc; uname -r; lscpu | grep -E 'Model name|MHz'; ls -l "$bin" target/gpumon-* 2>/dev/null; } | tee "$o/machine.txt"

gpus=$(nvidia-smi -L | wc -l); ranks=${RANKS:-$gpus}
echo "GPUs $gpus, job ranks $ranks" | tee -a "$o/machine.txt"
if [ "$ranks" -gt 1 ]; then
  ( eval "$("$bin" probe env --probe-dir /tmp/perfprobe/probes)"; RUN_S=1800 exec python3 -m torch.distributed.run \
      --standalone --nproc-per-node "$ranks" "$here/dist/ddp_job.py" healthy ) > "$o/busy.log" 2>&1 &
  settle=45
else
  ( eval "$("$bin" probe env --probe-dir /tmp/perfprobe/probes)"; BUSY_S=900 exec python3 "$here/torch_frag.py" busy ) \
    > "$o/busy.log" 2>&1 &
  settle=12
fi
busy=$!
# torchrun stops its ranks when it is stopped.
trap 'kill $busy 2>/dev/null; tmux kill-server 2>/dev/null' EXIT
sleep $settle
ls /tmp/perfprobe/probes | tee "$o/probes.txt"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | tee "$o/apps.txt"
GPUMON_PROBE_DIR=/tmp/perfprobe/probes "$bin" snapshot --format text > "$o/snapshot.txt" 2>&1
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader >> "$o/apps.txt"

echo "== (1) NVML call costs"
python3 "$here/nvml_call_costs.py" 20 0.25 | tee "$o/nvml-calls.txt"

reads="$bin serve --listen 127.0.0.1:9478"
for run in "screen:$bin --interval 1s" "screen-steady:$bin --interval 1s --history 10s" "reads:$reads"; do
  name=${run%%:*}; cmd=${run#*:}
  echo "== (2) tick breakdown: $name, 30 s"
  tmux new-session -d -s perf -x 120 -y 40 -e LANG=C.UTF-8 \
    "GPUMON_TICK_TIMES=$o/ticks-$name.txt GPUMON_PROBE_DIR=/tmp/perfprobe/probes exec $cmd"
  sleep 30
  tmux capture-pane -p -t perf > "$o/$name.txt"
  # Each thread's CPU over the whole run (ns, from the scheduler): where a tick's time goes outside
  # the parts timed above (the runtime, the event threads).
  ppid=$(tmux display -p -t perf '#{pane_pid}')
  for t in /proc/$ppid/task/*; do echo "$(cat $t/comm) $(cut -d' ' -f1 $t/schedstat)"; done > "$o/threads-$name.txt"
  tmux kill-session -t perf; sleep 1
  cat "$o/ticks-$name.txt" "$o/threads-$name.txt"; head -12 "$o/$name.txt"
done

echo "== (3) resident memory by mapping, after 10 s"
tools=("gpumon=env GPUMON_PROBE_DIR=/tmp/perfprobe/probes $bin --interval 1s")
for b in target/gpumon-*; do [ -x "$b" ] && tools+=("$(basename "$b")=env GPUMON_PROBE_DIR=/tmp/perfprobe/probes $PWD/$b --interval 1s"); done
for t in "${tools[@]}" "nvtop=$nvtop -d 10"; do
  name=${t%%=*}; cmd=${t#*=}
  tmux new-session -d -s rss -x 120 -y 40 -e LANG=C.UTF-8 "exec $cmd"; sleep 10
  pid=$(tmux display -p -t rss '#{pane_pid}')
  { echo "== $name: $(grep -E 'VmHWM|RssAnon|RssFile' /proc/$pid/status | tr -s ' \t\n' ' ') threads $(ls /proc/$pid/task | wc -l): $(cat /proc/$pid/task/*/comm | sort | uniq -c | tr -s ' \n' ' ')"
    awk -f "$here/rss_by_mapping.awk" /proc/$pid/smaps | sort -rn | head -8
  } >> "$o/rss.txt"
  tmux kill-session -t rss; sleep 1
done
cat "$o/rss.txt"

echo "== (4) the screens side by side, both orders, ${each} s each"
steady=(); for t in "${tools[@]}"; do steady+=("${t%%=*}-steady=${t#*=} --history 10s"); done
# Builds carried as target/floor-NAME are measured here only as their reading floor (NAME-reads-only).
floors=(); for b in target/floor-*; do [ -x "$b" ] && floors+=("${b#target/floor-}-reads-only=env GPUMON_PROBE_DIR=/tmp/perfprobe/probes $PWD/$b serve --listen 127.0.0.1:9478"); done
PYTHONPATH=/tmp/site python3 scripts/bench_vs_rivals.py --load 0 --both-orders --seconds "$each" \
  "${tools[@]}" "${steady[@]}" "gpumon-reads-only=env GPUMON_PROBE_DIR=/tmp/perfprobe/probes $reads" "${floors[@]}" \
  "nvtop=$nvtop -d 10" "nvitop=python3 -m nvitop --interval 1" | tee "$o/rivals.txt"

echo "== (5) serve against nvitop-exporter, scraped every second, both orders, ${serve_each} s each"
PYTHONPATH=/tmp/site python3 scripts/bench_vs_rivals.py --serve --load 0 --both-orders --seconds "$serve_each" \
  "gpumon-serve=http://127.0.0.1:9477/metrics=env GPUMON_TICK_TIMES=$o/ticks-serve.txt GPUMON_PROBE_DIR=/tmp/perfprobe/probes $bin serve --listen 127.0.0.1:9477" \
  "nvitop-exporter=http://127.0.0.1:8000/metrics=python3 -m nvitop_exporter --bind-address 127.0.0.1 --port 8000 --interval 1" \
  | tee "$o/serve.txt"
cat "$o/ticks-serve.txt"
kill $busy 2>/dev/null; wait $busy 2>/dev/null
tail -3 "$o/busy.log"
