#!/usr/bin/env bash
# Issue 34 on the GPU: a leak that fragments is named a leak first, fast, live and recorded.
#
# 1. Live under `gpumon serve` (sample every 1 s, probe every 500 ms, allocation history
#    recorded): scripts/gpu/workloads/keepers.py's gpt2-keep-slices (GPT-2, batch 8x512, AdamW,
#    16 GiB cap, a helper keeping logits[:, -8:, :].clone() every step) and jax-keep-maps (JAX,
#    no preallocation, 15 % memory fraction, a helper keeping each step's activations in a list,
#    jax.profiler loaded). Every 2 s this keeps /snapshot's alerts; at the end it prints each once
#    (time, seconds before the job's own OOM line, level, class, title, first evidence lines, the
#    remedy) and any notice about a refused probe file.
#    What to check: the first warning for the job is `leak` (never fragmentation-risk), within
#    about 15 s of the job's first step for the GPT-2, at least 20 s before its OOM; a `leak-site`
#    names keepers.py's `remember` (GPT-2) or `keep` (JAX) line; the failure is class `leak`
#    (GPT-2: "then fragmentation: … expandable segments would have bought about N s"; JAX: the
#    pool limit "after a leak") and its remedy starts "Find what keeps memory alive …, starting at
#    …keepers.py:… remember"; no "probe file … ignored" notice for the JAX maps.
# 2. Recorded by the corpus runner under `gpumon record` (which now asks the probe for maps during
#    the alerts, as serve does): OUT/corpus/{gpt2-keep-slices,jax-keep-maps}/, each then replayed
#    by `gpumon explain`: the same alerts, the leak-site in the recording.
#    To add them to the corpus: python3 scripts/alert_bench.py prepare OUT/corpus
#    tests/fixtures/workloads (then each RUN/expected.txt from `gpumon explain --format json`).
# Usage (repo root, target/release/gpumon built): bash scripts/gpu/leak_first_check.sh OUTDIR
# (about 8 minutes)
set -u
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
bin=$PWD/target/release/gpumon; o=$1; port=19478
mkdir -p "$o"
eval "$("$bin" probe env --interval 500ms --record-allocations)" || exit 1

live() {  # live MODE ENV...: one job under serve
  local mode=$1; shift
  local d="$o/serve-$mode"; mkdir -p "$d"
  "$bin" serve --listen 127.0.0.1:$port --interval 1s 2>"$d/serve.err" &
  local serve=$!
  sleep 2
  (cd scripts/gpu/workloads && exec env "$@" python3 keepers.py "$mode") >"$d/job.out" 2>"$d/job.err" &
  local job=$!
  python3 - "$port" "$job" "$d" <<'PY'
import json, os, sys, time, urllib.request
port, job, d = sys.argv[1], int(sys.argv[2]), sys.argv[3]
seen, end, gone_at = {}, time.time() + 330, None
def alive():
    try:
        with open(f"/proc/{job}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False
while time.time() < end:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/snapshot?tiers=0", timeout=5) as r:
            doc = json.load(r)
        for a in doc.get("alerts", []):
            seen.setdefault((a.get("at"), a.get("class"), a.get("pid")), a)
    except OSError:
        pass
    if not alive():
        gone_at = gone_at or time.time()
        if time.time() - gone_at > 8:
            break
    time.sleep(2)
lines = [json.loads(l) for l in open(f"{d}/job.out") if l.startswith('{"ev"')]
first = next((l["t"] for l in lines if l.get("ev") == "step"), None)
oom = next((l["t"] for l in lines if l.get("ev") == "oom"), None)
alerts = sorted(seen.values(), key=lambda a: str(a.get("at")))
json.dump(alerts, open(f"{d}/alerts.json", "w"), indent=1)
print(f"== {d}: first step {first}, OOM {oom}")
def seconds(at):  # "2026-11-30T10:00:01.234Z" -> Unix seconds
    from datetime import datetime
    try:
        return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()
    except (AttributeError, ValueError):
        return None
for a in alerts:
    at = (seconds(a.get("at")) or 0) * 1000
    when = f"{(at / 1000 - first):6.1f}s after the first step" if first and at else ""
    ahead = f", {oom - at / 1000:5.1f}s before the OOM" if oom and at else ""
    print(a.get("at"), when + ahead, a.get("level"), a.get("class"), a.get("pid"), "|", a.get("title"))
    for e in (a.get("evidence") or [])[:3]:
        print("    -", e)
    if a.get("remedy"):
        print("    remedy:", a["remedy"])
PY
  wait $job; echo "job exit $?"
  kill $serve; wait $serve 2>/dev/null
  grep -c "ignored" "$d/serve.err" | sed 's/^/probe files refused (notices in serve.err): /'
  tail -2 "$d/job.err"
}

live gpt2-keep-slices CAP_GIB=16
live jax-keep-maps KEEP_MIB=16 STEP_S=0.1 XLA_PYTHON_CLIENT_PREALLOCATE=false \
  XLA_PYTHON_CLIENT_MEM_FRACTION=0.15
python3 scripts/gpu/workloads/corpus.py "$bin" "$o/corpus" gpt2-keep-slices jax-keep-maps
for r in gpt2-keep-slices jax-keep-maps; do
  echo "== recorded $r"
  GPUMON_NVML_LIB=/nonexistent "$bin" explain "$o/corpus/$r/recording.ndjson" | head -80
done
