#!/usr/bin/env bash
# `gpumon run` on a real GPU: a PyTorch job that hits a fragmentation OOM while another process
# holds most of the card; the screen is captured after the job ends, then gpumon is quit.
set -u
export PYTHONDONTWRITEBYTECODE=1  # python run in place leaves no __pycache__ in the checkout
o=$1; mkdir -p "$o" /tmp/r
HOLD_S=45 LEAVE_GIB=6 python3 scripts/gpu/hog.py > /dev/null 2>&1 &
sleep 8
tmux new-session -d -s r -x 100 -y 30 -e LANG=C.UTF-8 \
  "$PWD/target/release/gpumon run --log-dir /tmp/r -- python3 scripts/gpu/torch_frag.py fill 2>/tmp/r/stderr; echo \$? > /tmp/r/exit; sleep 30"
sleep 9; tmux capture-pane -p -t r > "$o/run-during.txt"
sleep 12; tmux capture-pane -p -t r > "$o/run-ended.txt"
tmux send-keys -t r q; sleep 2
echo "exit status: $(cat /tmp/r/exit)"; cat /tmp/r/stderr; ls -la /tmp/r
cat "$o/run-during.txt" "$o/run-ended.txt"
