#!/usr/bin/env bash
# GPU checks of the screen: where peak RSS goes (gpumon builds against nvtop,
# per mapping), per-process utilisation against `nvidia-smi pmon` on a busy PyTorch job, a PyTorch
# job that dies of an OOM under `gpumon run` kept selectable on screen, and the rivals benchmark.
# Expects, carried: target/release/gpumon (and optionally more builds as target/gpumon-*),
# .deb/nvtop_*.deb and .whl/ (nvitop, nvidia-ml-py). Usage: bash scripts/gpu/rss_util_oom_rivals.sh OUT [PARTS]
# PARTS: any of rss util oom rivals (default all).
set -u
export PYTHONDONTWRITEBYTECODE=1  # python run in place leaves no __pycache__ in the checkout
export PYTHONUNBUFFERED=1 LANG=C.UTF-8
o=$1; parts=${2:-"rss util oom rivals"}; mkdir -p "$o"; here=$PWD/scripts/gpu; bin=$PWD/target/release/gpumon
mkdir -p /tmp/nvtop && dpkg -x .deb/nvtop_*.deb /tmp/nvtop; nvtop=/tmp/nvtop/usr/bin/nvtop
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader | tee "$o/gpu.txt"

breakdown() { # NAME CMD...: run in a 120x40 pane for 12 s, then VmHWM and RSS per mapping
  local name=$1; shift
  tmux new-session -d -s rss -x 120 -y 40 -e LANG=C.UTF-8 "$*"; sleep 12
  local pid; pid=$(tmux display -p -t rss '#{pane_pid}')
  { echo "== $name: $*"
    grep -E 'VmHWM|VmRSS|RssAnon|RssFile' /proc/$pid/status | tr -s ' \t' ' ' | tr '\n' ' '; echo
    echo "threads: $(ls /proc/$pid/task | wc -l)"
    awk '/^[0-9a-f]+-[0-9a-f]+ /{n=$6; if(n=="")n="[anon]"} /^Rss:/{r[n]+=$2} END{for(k in r) if(r[k]>=16) printf "%8d kB %s\n", r[k], k}' /proc/$pid/smaps | sort -rn | head -25
  } >> "$o/rss.txt"
  tmux kill-session -t rss; sleep 1
}

if [[ $parts == *rss* ]]; then
  for b in target/release/gpumon target/gpumon-*; do [ -x "$b" ] && breakdown "$b" "$PWD/$b --interval 1s"; done
  breakdown nvtop "$nvtop -d 10"
  cat "$o/rss.txt"
fi

if [[ $parts == *util* ]]; then
  echo "== util"
  BUSY_S=40 python3 "$here/torch_frag.py" busy > "$o/busy.log" 2>&1 &
  busy=$!; sleep 12
  "$bin" record "$o/util.ndjson" --interval 1s --duration 16s 2> "$o/util-record.err" &
  rec=$!
  nvidia-smi pmon -s um -o T -d 1 -c 14 > "$o/pmon.txt" 2>&1
  wait $rec; wait $busy; head -8 "$o/pmon.txt"
fi

if [[ $parts == *oom* ]]; then
  echo "== oom"
  rm -rf /tmp/oomlogs; mkdir -p /tmp/oomlogs
  GROW_GIB=6 HOLD_S=60 python3 "$here/torch_frag.py" grow > /tmp/oomlogs/grow.out 2>&1 &
  grow=$!
  tmux new-session -d -s oom -x 200 -y 50 -e LANG=C.UTF-8 "DIE=1 $bin run --log-dir /tmp/oomlogs -- python3 $here/torch_frag.py full"
  sleep 10; tmux capture-pane -p -t oom > "$o/oom-1-running.txt"
  sleep 12; tmux capture-pane -p -t oom > "$o/oom-2-died.txt"
  for k in j j j; do tmux send-keys -t oom "$k"; sleep 0.4; done
  tmux capture-pane -p -t oom > "$o/oom-3-selected.txt"
  tmux send-keys -t oom k; sleep 0.4; tmux capture-pane -p -t oom > "$o/oom-4-up.txt"
  tmux resize-window -t oom -x 120 -y 40 2>/dev/null; sleep 1.5; tmux capture-pane -p -t oom > "$o/oom-5-120x40.txt"
  tmux send-keys -t oom q; sleep 1; tmux kill-session -t oom 2>/dev/null
  cp /tmp/oomlogs/* "$o/" 2>/dev/null; kill $grow 2>/dev/null; wait $grow 2>/dev/null
  tail -60 "$o/oom-2-died.txt"
fi

if [[ $parts == *rivals* ]]; then
  echo "== rivals"
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
  tools=("gpumon=$bin --interval 1s")
  for b in target/gpumon-*; do [ -x "$b" ] && tools+=("$(basename "$b")=$PWD/$b --interval 1s"); done
  # gpumon runs again last, so an order effect (the load settling) would show as a difference.
  python3 scripts/bench_vs_rivals.py --seconds "${SECONDS_EACH:-20}" "${tools[@]}" "nvtop=$nvtop -d 10" \
    "nvitop=python3 -m nvitop --interval 1" "gpumon-again=$bin --interval 1s" | tee "$o/rivals.txt"
fi
