#!/usr/bin/env bash
# CI: runs the unit tests of the alert benchmark's truth rule (scripts/test_alert_bench.py), then
# scores the gpumon binary's alerts on the real-workload fixtures (tests/fixtures/workloads) with
# scripts/alert_bench.py, held-out runs left out (their results stay unseen while rules are
# tuned). Builds nothing: the binary must exist (GPUMON, default target/debug/gpumon). Extra
# arguments go to `alert_bench.py score` (e.g. --check to fail on a missed goal). Writes nothing
# into the checkout: no bytecode, no output files.
set -euo pipefail
cd "$(dirname "$0")/../.."
gpumon=${GPUMON:-target/debug/gpumon}
if [ ! -x "$gpumon" ]; then
    echo "alert_bench: $gpumon not found; build it first (cargo build)" >&2
    exit 2
fi
export PYTHONDONTWRITEBYTECODE=1
python3 -B -m unittest discover -s scripts -p test_alert_bench.py
exec python3 -B scripts/alert_bench.py score tests/fixtures/workloads --gpumon "$gpumon" \
    --format text "$@"
