#!/usr/bin/env bash
# The code pages of gpumon's binary that a screen and a scraped `serve` run on a GPU machine, for
# scripts/hot_text.py (`pages DIR` names their functions, which `write` reads): what only a GPU
# makes run (NVML's answers, a probed job's files) is not in the profiles taken without one. One busy PyTorch job
# with the allocator probe runs, as in perf_vs_rivals.sh. Each measured gpumon has
# scripts/gpu/code_pages.c preloaded: its code pages start without rights and get them back at
# their first use, so after 25 s the pages with rights are the ones that ran. Alongside, for the
# same 25 s: resident memory of the build as it is, with glibc's malloc held to one arena
# (MALLOC_ARENA_MAX=1), and of nvtop.
# Expects, carried: target/release/gpumon (built with GPUMON_LINK_MAP, as hot_text.py says),
# target/hot-text/code_pages.so (made by `python3 scripts/hot_text.py build`) and
# target/gpu-assets/deb/nvtop_*.deb.
# Usage: bash scripts/gpu/touched_pages.sh OUT
set -u
export PYTHONUNBUFFERED=1 LANG=C.UTF-8
o=$1; mkdir -p "$o"; o=$(cd "$o" && pwd); here=$PWD/scripts/gpu
bin=$PWD/target/release/gpumon; preload=$PWD/target/hot-text/code_pages.so
mkdir -p /tmp/nvtop && dpkg -x target/gpu-assets/deb/nvtop_*.deb /tmp/nvtop; nvtop=/tmp/nvtop/usr/bin/nvtop
probes=/tmp/touched/probes
( eval "$("$bin" probe env --probe-dir $probes)"; BUSY_S=300 exec python3 "$here/torch_frag.py" busy ) \
  > "$o/busy.log" 2>&1 &
busy=$!
trap 'kill $busy 2>/dev/null; tmux kill-server 2>/dev/null' EXIT
sleep 12
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | tee "$o/apps.txt"

# A copy of the build for each, so that no two share the page cache's pages.
for name in screen serve default arena1; do mkdir -p /tmp/touched/$name; cp "$bin" /tmp/touched/$name/gpumon; done
start() { tmux new-session -d -s "$1" -x 120 -y 40 -e LANG=C.UTF-8 -e GPUMON_PROBE_DIR=$probes "exec $2"; }
start screen "env LD_PRELOAD=$preload /tmp/touched/screen/gpumon --interval 1s"
start serve "env LD_PRELOAD=$preload /tmp/touched/serve/gpumon serve --listen 127.0.0.1:9479"
start default "/tmp/touched/default/gpumon --interval 1s"
start arena1 "env MALLOC_ARENA_MAX=1 /tmp/touched/arena1/gpumon --interval 1s"
start nvtop "$nvtop -d 10"
# The screen's keys (down, a GPU's focus, the block map, the alerts, help, the chart's scale) and
# `serve`'s pages, once a second.
for i in $(seq 1 22); do
  case $i in 4) k=j;; 6) k=Tab;; 8) k=m;; 10) k=Escape;; 12) k=a;; 14) k=Escape;; 16) k='?';; 17) k=Escape;; 19) k=g;; *) k=;; esac
  [ -n "$k" ] && tmux send-keys -t screen "$k"
  python3 -c "import urllib.request as u; [u.urlopen('http://127.0.0.1:9479/' + p, timeout=2).read() for p in ('metrics', 'snapshot')]" 2>/dev/null
  sleep 1
done
sleep 3
for name in screen serve; do
  { echo "# sha256 $(sha256sum < "$bin" | cut -d' ' -f1)"
    python3 "$here/touched_pages.py" "$(tmux display -p -t $name '#{pane_pid}')"; } > "$o/$name.pages"
  echo "$name: $(($(wc -l < "$o/$name.pages") - 1)) code pages ran"
done | tee "$o/pages.txt"
for name in default arena1 nvtop; do
  pid=$(tmux display -p -t $name '#{pane_pid}')
  { echo "== $name: $(grep -E 'VmHWM|RssAnon|RssFile' /proc/$pid/status | tr -s ' \t\n' ' ') threads $(ls /proc/$pid/task | wc -l)"
    awk -f "$here/rss_by_mapping.awk" /proc/$pid/smaps | sort -rn | head -9
  } >> "$o/rss.txt"
done
cat "$o/rss.txt"
tmux capture-pane -p -t screen > "$o/screen.txt"
