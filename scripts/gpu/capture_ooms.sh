#!/usr/bin/env bash
# Real allocation-failure logs for gpumon's fixtures; writes into $OUT/ooms/.
set -u
export PYTHONDONTWRITEBYTECODE=1  # python run in place leaves no __pycache__ in the checkout
export PYTHONUNBUFFERED=1
here=$(dirname "$0"); o=$OUT/ooms; mkdir -p "$o"
nvidia-smi -q -x > "$o/nvidia-smi-idle.xml" 2>&1
python3 "$here/torch_frag.py" fraction > "$o/torch-fraction-frag.log" 2>&1
HOLD_S=40 LEAVE_GIB=6 python3 "$here/hog.py" > "$o/hog1.log" 2>&1 & sleep 8
python3 "$here/torch_frag.py" fill > "$o/torch-fill-frag.log" 2>&1
nvidia-smi --query-compute-apps=pid,used_memory --format=csv > "$o/apps-during-hog.csv"
wait
HOLD_S=30 LEAVE_GIB=4 python3 "$here/hog.py" > "$o/hog2.log" 2>&1 & sleep 8
python3 "$here/torch_frag.py" full > "$o/torch-device-full.log" 2>&1
wait
XLA_PYTHON_CLIENT_MEM_FRACTION=.02 python3 "$here/jax_oom.py" limit > "$o/jax-pool-limit.log" 2>&1
XLA_PYTHON_CLIENT_MEM_FRACTION=.05 python3 "$here/jax_oom.py" frag > "$o/jax-frag.log" 2>&1
CUPY_GPU_MEMORY_LIMIT=1073741824 python3 "$here/cupy_oom.py" limit > "$o/cupy-pool-limit.log" 2>&1
cd "$o" && tar czf "$OUT/ooms.tgz" . && ls -la
