#!/usr/bin/env bash
# Real data for fixtures: pool maps (issue 26) and memory health and faults (issue 28).
# Usage: bash scripts/gpu/capture_map_and_fault_data.sh OUTDIR   (about 2 minutes; no GPU setting changes)
set -u
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
here=$(cd "$(dirname "$0")" && pwd); o=$1; mkdir -p "$o/maps" "$o/health"
nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT > "$o/health/nvsmi-ecc-before.txt" 2>&1
nvidia-smi -q -x > "$o/health/nvsmi-q.xml" 2>&1
nvidia-smi > "$o/health/nvsmi.txt" 2>&1
python3 "$here/capture_pool_maps.py" "$o/maps" torch > "$o/maps/torch.out" 2>&1
XLA_PYTHON_CLIENT_PREALLOCATE=false python3 "$here/capture_pool_maps.py" "$o/maps" jax > "$o/maps/jax.out" 2>&1
python3 "$here/memory_faults.py" "$o/health" > "$o/health/faults.out" 2>&1
nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT > "$o/health/nvsmi-ecc-after.txt" 2>&1
{ echo "== dmesg"; dmesg 2>&1 | grep -iE 'nvrm|xid' | tail -50
  echo "== journalctl -k"; journalctl -k --no-pager 2>&1 | grep -iE 'nvrm|xid' | tail -50
  echo "== /dev/kmsg"; timeout 2 cat /dev/kmsg 2>&1 | grep -iE 'nvrm|xid|denied|Operation' | tail -50
  ls -l /dev/kmsg; id; } > "$o/health/kernel-log.txt" 2>&1
ls -la "$o/maps" "$o/health"
