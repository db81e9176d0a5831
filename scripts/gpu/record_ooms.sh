#!/usr/bin/env bash
# Pool-limit and JAX fragmentation OOMs with a gpumon recording made at the same time (the jobs'
# output goes to files gpumon finds through /proc/PID/fd). Usage: bash scripts/gpu/record_ooms.sh OUTDIR
set -u
export PYTHONDONTWRITEBYTECODE=1  # python run in place leaves no __pycache__ in the checkout
export PYTHONUNBUFFERED=1
o=$1; mkdir -p "$o" /tmp/oom && cd /tmp/oom; here=/work/main/scripts/gpu; bin=/work/main/target/release/gpumon
[ -x "$bin" ] || { here=$OLDPWD/scripts/gpu; bin=$OLDPWD/target/release/gpumon; }
"$bin" record "$o/ooms.ndjson" --duration 75s --interval 1s 2> "$o/record.err" &
rec=$!; sleep 2
CUPY_GPU_MEMORY_LIMIT=1073741824 HOLD_S=0 python3 $here/cupy_oom.py limit > cupy-limit.log 2>&1; sleep 3
XLA_PYTHON_CLIENT_MEM_FRACTION=.02 python3 $here/jax_oom.py limit > jax-limit.log 2>&1; sleep 3
# JAX fragmentation: a hog leaves 6 GiB; JAX (no preallocation) fills 5 GB in 100 MB arrays, frees
# every other one (2.5 GB of holes), then asks for 1 GB with ~0.5 GB left on the device.
HOLD_S=40 LEAVE_GIB=6 python3 $here/hog.py > hog.log 2>&1 & sleep 8
XLA_PYTHON_CLIENT_PREALLOCATE=false N=50 BIG_MB=1000 python3 $here/jax_oom.py frag > jax-frag.log 2>&1
wait $rec
cp *.log "$o/"; head -c 1500 cupy-limit.log jax-limit.log jax-frag.log; cat "$o/record.err"
"$bin" explain cupy-limit.log jax-limit.log jax-frag.log
