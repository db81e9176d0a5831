#!/usr/bin/env bash
# Two real snapshots for `gpumon diff`: the same JAX + PyTorch jobs with JAX's default
# preallocation and with XLA_PYTHON_CLIENT_PREALLOCATE=false; each checked against nvidia-smi and
# /proc. Also retries a JAX BFC fragmentation OOM. Usage: bash scripts/gpu/snapshot_pair.sh OUTDIR TAG
set -u
export PYTHONDONTWRITEBYTECODE=1  # python run in place leaves no __pycache__ in the checkout
export PYTHONUNBUFFERED=1
o=$1; tag=$2; mkdir -p "$o"; bin=$PWD/target/release/gpumon; here=scripts/gpu
GROW_GIB=2 HOLD_S=80 python3 $here/torch_frag.py grow > /dev/null 2>&1 & torch=$!
HOLD_S=30 python3 $here/jax_oom.py prealloc > /dev/null 2>&1 & jax=$!
sleep 22
/usr/bin/time -f "snapshot wall %e s" "$bin" snapshot -o "$o/$tag-jax-prealloc.json" 2>> "$o/timing.txt"
/usr/bin/time -f "nvidia-smi wall %e s" nvidia-smi > /dev/null 2>> "$o/timing.txt"
python3 $here/verify_numbers.py "$o/$tag-jax-prealloc.json" > "$o/$tag-verify.txt" 2>&1
kill $jax; wait $jax 2>/dev/null
XLA_PYTHON_CLIENT_PREALLOCATE=false HOLD_S=30 python3 $here/jax_oom.py prealloc > /dev/null 2>&1 & jax=$!
sleep 20
"$bin" snapshot -o "$o/$tag-jax-noprealloc.json"
python3 $here/verify_numbers.py "$o/$tag-jax-noprealloc.json" >> "$o/$tag-verify.txt" 2>&1
kill $jax $torch; wait 2>/dev/null
XLA_PYTHON_CLIENT_MEM_FRACTION=.05 N=38 BIG_MB=500 python3 $here/jax_oom.py frag > "$o/$tag-jax-frag.log" 2>&1
"$bin" diff "$o/$tag-jax-prealloc.json" "$o/$tag-jax-noprealloc.json" > "$o/$tag-diff.txt" 2>&1
cat "$o/$tag-verify.txt" "$o/timing.txt" "$o/$tag-jax-frag.log" "$o/$tag-diff.txt"
