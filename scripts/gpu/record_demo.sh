#!/usr/bin/env bash
# Records gpumon's demo on a real GPU: JAX with default preallocation, a PyTorch process growing
# step by step, a CuPy pool, then a PyTorch job that hits a fragmentation OOM and one that hits a
# device-full OOM, their output going to log files gpumon finds through /proc/PID/fd. Every job
# runs with the allocator probe (`gpumon probe env`), so the demo shows their pools, and the
# fragmenting job's cache warns (fragmentation-risk) seconds before its OOM.
# Usage (repo root, with target/release/gpumon built): bash scripts/gpu/record_demo.sh OUTDIR
set -u
export PYTHONDONTWRITEBYTECODE=1  # python run in place leaves no __pycache__ in the checkout
export PYTHONUNBUFFERED=1
here=$(cd "$(dirname "$0")" && pwd); bin=$PWD/target/release/gpumon; o=$1
mkdir -p "$o" /tmp/demo && cd /tmp/demo
eval "$("$bin" probe env)" || exit 1
"$bin" record "$o/demo.ndjson" --duration "${DEMO_S:-120}s" --interval 1s 2>"$o/record.err" &
rec=$!
sleep 2
HOLD_S=105 python3 "$here/jax_oom.py" prealloc > jax.log 2>&1 &
sleep 8
HOLD_S=95 python3 "$here/cupy_oom.py" hold > cupy.log 2>&1 &
sleep 4
GROW_GIB=6 HOLD_S=50 python3 "$here/torch_frag.py" grow > grow.log 2>&1 &
sleep 45
FRAG_WAIT_S=8 HOLD_S=6 python3 "$here/torch_frag.py" fill > train.log 2>&1
sleep 4
HOLD_S=4 python3 "$here/torch_frag.py" full > finetune.log 2>&1
wait $rec
cp /tmp/demo/*.log "$o/" 2>/dev/null
wait
