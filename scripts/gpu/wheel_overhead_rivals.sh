#!/usr/bin/env bash
# GPU checks of the packaging and cost: the wheel installed into a fresh venv (gpumon --version,
# snapshot, `gpumon run` with the probe on a PyTorch job under tmux, python -m gpumon), the probe's
# overhead over more runs, and gpumon against nvtop and nvitop (perf_run.sh). Expects, carried:
# target/release/gpumon, wheels/gpumon-*.whl, .deb/nvtop_*.deb and .whl/ (nvitop, nvidia-ml-py).
# Usage: bash scripts/gpu/wheel_overhead_rivals.sh OUT
set -u
export PYTHONDONTWRITEBYTECODE=1  # python run in place leaves no __pycache__ in the checkout
export PYTHONUNBUFFERED=1
o=$1; mkdir -p "$o"; here=$PWD/scripts/gpu
echo "== wheel"
python3 -m venv /tmp/venv && /tmp/venv/bin/pip install -q --no-index wheels/gpumon-*.whl
/tmp/venv/bin/gpumon --version; /tmp/venv/bin/python -m gpumon --version
/tmp/venv/bin/gpumon snapshot --format text | head -12
cd /tmp && tmux new-session -d -s w -x 120 -y 40 "GROW_GIB=2 HOLD_S=25 /tmp/venv/bin/python -m gpumon run --log-dir /tmp -- python3 $here/torch_frag.py grow" && cd - >/dev/null
sleep 16; tmux capture-pane -p -t w | tee "$o/run-screen.txt"
sleep 12; tmux send-keys -t w q; sleep 1; ls -la /tmp/gpumon-0/probe /tmp/gpumon-0/hook 2>&1 | tee "$o/probe-dir.txt"
echo "== overhead"; bash scripts/bench_probe_overhead.sh "${RUNS:-10}" 2>&1 | tee "$o/overhead.txt" | tail -2
echo "== rivals"; SECONDS_EACH=${SECONDS_EACH:-20} bash "$here/perf_run.sh" "$o" 2>&1 | tail -12
