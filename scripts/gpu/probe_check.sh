#!/usr/bin/env bash
# The allocator probe on a real GPU (issue 11): PyTorch, JAX and CuPy jobs started with the probe
# (`gpumon probe env`) while `gpumon record` samples; each job prints its own pool statistics, and
# probe_verify.py compares them with gpumon's figures. Also: two probed processes on one GPU, the
# job's imports with and without the probe, and the alerts gpumon raised.
# Usage (repo root, target/release/gpumon built): bash scripts/gpu/probe_check.sh OUTDIR
set -u
export PYTHONDONTWRITEBYTECODE=1  # python run in place leaves no __pycache__ in the checkout
export PYTHONUNBUFFERED=1
here=$(cd "$(dirname "$0")" && pwd); bin=$PWD/target/release/gpumon; o=$1
mkdir -p "$o"
"$bin" record "$o/probe.ndjson" --duration "${PROBE_S:-50}s" --interval 500ms 2>"$o/record.err" &
rec=$!
sleep 2
(
  eval "$("$bin" probe env --interval 250ms)" || exit 1
  echo "probe dir: $GPUMON_PROBE_DIR hook: $GPUMON_PROBE_HOOK_DIR"
  python3 "$here/probe_jobs.py" torch-frag >"$o/torch.log" 2>"$o/torch.err"; echo "torch-frag exit $?"
  XLA_PYTHON_CLIENT_PREALLOCATE=false HOLD_S=6 python3 "$here/probe_jobs.py" jax >"$o/jax.log" 2>"$o/jax.err"; echo "jax exit $?"
  HOLD_S=5 python3 "$here/probe_jobs.py" cupy >"$o/cupy.log" 2>"$o/cupy.err"; echo "cupy exit $?"
  # Two probed processes on one GPU at once: each writes its own file.
  GROW_GIB=1 HOLD_S=6 python3 "$here/torch_frag.py" grow >"$o/two-a.log" 2>&1 &
  GROW_GIB=1 HOLD_S=6 python3 "$here/torch_frag.py" grow >"$o/two-b.log" 2>&1 &
  sleep 5; ls -l "$GPUMON_PROBE_DIR"; "$bin" snapshot --format text >"$o/two.txt" 2>&1; wait
  # Imports and output with and without the probe.
  code='import sys, torch; torch.ones(1, device="cuda"); print(sorted(m for m in sys.modules if not m.startswith("_")))'
  python3 -c "$code" >"$o/imports-probe.txt" 2>&1; echo "with probe exit $?"
  env -u PYTHONPATH -u GPUMON_PROBE_DIR python3 -c "$code" >"$o/imports-plain.txt" 2>&1; echo "without exit $?"
  python3 - "$o/imports-probe.txt" "$o/imports-plain.txt" <<'PY'
import ast, sys
a, b = (set(ast.literal_eval(open(p).read().strip().splitlines()[-1])) for p in sys.argv[1:])
print("modules only with the probe:", sorted(a - b), "only without:", sorted(b - a))
PY
) >"$o/jobs.txt" 2>&1
wait $rec
python3 "$here/probe_verify.py" "$o/probe.ndjson" "$o/torch.log" "$o/jax.log" "$o/cupy.log" >"$o/verify.txt" 2>&1
cat "$o/jobs.txt" "$o/verify.txt"
echo "--- alerts gpumon raised (record):"; cat "$o/record.err"
echo "--- OOM times (job stderr):"; grep -l OutOfMemory "$o"/*.err
