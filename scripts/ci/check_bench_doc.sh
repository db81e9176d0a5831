#!/usr/bin/env bash
# CI: the alert benchmark's table in docs/benchmarks.md is exactly what
# `alert_bench.py score --holdout include --format markdown` prints for the gpumon binary built
# from this tree (GPUMON, default target/debug/gpumon), so the page cannot drift from the rules.
# Compares in memory and writes nothing; on a difference prints the diff (- the page, + the
# script) and the block to paste between the page's markers.
set -euo pipefail
cd "$(dirname "$0")/../.."
gpumon=${GPUMON:-target/debug/gpumon}
doc=docs/benchmarks.md
begin='<!-- alert_bench markdown: begin -->'
end='<!-- alert_bench markdown: end -->'
if [ ! -x "$gpumon" ]; then
  echo "check_bench_doc: $gpumon not found; build it first (cargo build)" >&2
  exit 2
fi
if ! grep -qxF "$begin" "$doc" || ! grep -qxF "$end" "$doc"; then
  echo "check_bench_doc: $doc lacks the lines '$begin' and '$end'" >&2
  exit 1
fi
export PYTHONDONTWRITEBYTECODE=1
expected=$(python3 -B scripts/alert_bench.py score tests/fixtures/workloads --gpumon "$gpumon" \
  --holdout include --format markdown)
actual=$(awk -v b="$begin" -v e="$end" '$0 == e { inside = 0 } inside { print } $0 == b { inside = 1 }' "$doc")
if [ "$expected" != "$actual" ]; then
  echo "check_bench_doc: the alert benchmark's table in $doc is not what alert_bench.py prints now" >&2
  diff <(printf '%s\n' "$actual") <(printf '%s\n' "$expected") | sed 's/^</- page:  /; s/^>/+ script:/' >&2 || true
  echo "check_bench_doc: paste this between the markers of $doc:" >&2
  printf '%s\n' "$expected" >&2
  exit 1
fi
echo "check_bench_doc: $doc's alert table is what alert_bench.py prints"
