#!/usr/bin/env bash
# Where gpumon's resident memory goes: live (NVML loaded) vs --demo (no NVML), per mapping.
set -u
bin=$PWD/target/release/gpumon
for mode in live demo; do
  args=""; [ $mode = demo ] && args="--demo"
  tmux new-session -d -s "r$mode" -x 120 -y 40 -e LANG=C.UTF-8 "$bin $args"  # gpumon is the pane process
  sleep 6
  pid=$(tmux display -p -t r$mode '#{pane_pid}')
  echo "== $mode pid $pid: $(grep -E 'VmHWM|VmRSS' /proc/$pid/status | tr -s ' ' | tr '\n' ' ')"
  grep -E '^(Rss|Anonymous|Private_Dirty)' /proc/$pid/smaps_rollup | tr -s ' ' | tr '\n' ' '; echo
  awk '/^[0-9a-f]+-[0-9a-f]+ /{name=$6; if(name=="")name="[anon]"} /^Rss:/{rss[name]+=$2} END{for(n in rss) if(rss[n]>=256) printf "%8d kB %s\n", rss[n], n}' /proc/$pid/smaps | sort -rn | head -12
  ls /proc/$pid/task | wc -l | sed 's/^/threads: /'
  tmux send-keys -t "r$mode" q; sleep 0.5
done
