#!/usr/bin/env bash
# Issue 28 on a GPU machine: gpumon's memory-health readings against nvidia-smi, NVML event
# registration, and real illegal-address faults (CuPy, and torch through a CuPy kernel) followed
# by `gpumon record` and classified by `gpumon explain`, with whether an Xid arrived (kernel log
# and gpumon's event wait). Changes no GPU setting. About a minute (at most 3: each fault program
# is given 60 s).
# usage: GPUMON=/path/to/release/gpumon bash scripts/gpu/memory_health_check.sh OUTDIR
# Writes OUTDIR/summary.json (the verdicts) beside every raw output it compared.
set -u
gpumon=${GPUMON:?set GPUMON to the gpumon release binary}
out=${1:?usage: GPUMON=... $0 OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1

# 1. The readings: nvidia-smi and gpumon at the same moment (counters change rarely).
nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT > "$out/nvsmi-ecc.txt" 2>&1
nvidia-smi -q -x > "$out/nvsmi-q.xml" 2>&1
"$gpumon" snapshot --format json -o "$out/snapshot.json" 2> "$out/snapshot.err"
"$gpumon" snapshot --format text -o "$out/snapshot.txt" 2>> "$out/snapshot.err"

# 2. The faults, followed live by `gpumon record` (its event wait and /dev/kmsg reader run too).
dmesg 2>/dev/null | grep -c 'NVRM: Xid' > "$out/xid-lines-before.txt" || true
: > "$out/fault-cupy-illegal.log"
: > "$out/fault-torch-illegal.log"
"$gpumon" record "$out/record.ndjson" --duration 170s \
  --log "$out/fault-cupy-illegal.log" --log "$out/fault-torch-illegal.log" \
  > "$out/record.out" 2>&1 &
rec=$!
sleep 5
timeout 60 python3 "$here/memory_fault_programs.py" cupy-illegal >> "$out/fault-cupy-illegal.log" 2>&1
echo "exit $?" > "$out/fault-cupy-illegal.status"
sleep 4
timeout 60 python3 "$here/memory_fault_programs.py" torch-illegal >> "$out/fault-torch-illegal.log" 2>&1
echo "exit $?" > "$out/fault-torch-illegal.status"
sleep 6
kill -INT "$rec" 2>/dev/null
wait "$rec"
echo "exit $?" > "$out/record.status"

# 3. The kernel's record, and what gpumon explains from the logs (with and without it).
{ dmesg 2>&1 | grep 'NVRM' | tail -40; } > "$out/dmesg-nvrm.txt"
{ journalctl -k --no-pager -o short-iso 2>&1 | grep 'NVRM' | tail -40; } > "$out/journal-nvrm.txt"
for f in cupy-illegal torch-illegal; do
  "$gpumon" explain --format json "$out/fault-$f.log" > "$out/explain-$f.json" 2>&1
  "$gpumon" explain --format json "$out/fault-$f.log" "$out/dmesg-nvrm.txt" > "$out/explain-$f-dmesg.json" 2>&1
done
"$gpumon" explain --format json "$out/record.ndjson" > "$out/explain-record.json" 2>&1
"$gpumon" explain "$out/record.ndjson" > "$out/explain-record.txt" 2>&1

python3 "$here/memory_health_compare.py" "$out" > "$out/summary.json"
cat "$out/summary.json"
