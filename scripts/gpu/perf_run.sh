#!/usr/bin/env bash
# Final GPU-machine run: gpumon against nvtop and nvitop (same load, same pty size, one after another),
# `gpumon snapshot` wall time against nvidia-smi, and a last numbers check. Expects, carried from the
# development machine: target/release/gpumon, .deb/nvtop_*.deb (Debian contrib) and .whl/ (nvitop
# and nvidia-ml-py wheels). Usage: bash scripts/gpu/perf_run.sh OUTDIR
set -u
export PYTHONDONTWRITEBYTECODE=1  # python run in place leaves no __pycache__ in the checkout
o=$1; mkdir -p "$o"
mkdir -p /tmp/nvtop && dpkg -x .deb/nvtop_*.deb /tmp/nvtop
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
nvtop=/tmp/nvtop/usr/bin/nvtop
$nvtop --version 2>&1 | head -1; python3 -m nvitop --version 2>&1 | head -1
python3 scripts/bench_vs_rivals.py --seconds "${SECONDS_EACH:-30}" \
  "gpumon=$PWD/target/release/gpumon --interval 1s" "nvtop=$nvtop -d 10" "nvitop=python3 -m nvitop --interval 1" | tee "$o/rivals.txt"
python3 - <<'PY' | tee "$o/snapshot-time.txt"
import statistics, subprocess, time
def median_ms(cmd, n=20):
    ts = []
    for _ in range(n):
        t = time.perf_counter(); subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        ts.append((time.perf_counter() - t) * 1000)
    return statistics.median(ts)
g = median_ms(["target/release/gpumon", "snapshot", "-o", "/tmp/s.json"])
n = median_ms(["nvidia-smi"])
q = median_ms(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv"])
print(f"median of 20 runs: gpumon snapshot {g:.1f} ms, nvidia-smi {n:.1f} ms, nvidia-smi --query-compute-apps {q:.1f} ms; ratio {g/n:.2f}x")
PY
