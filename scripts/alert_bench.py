#!/usr/bin/env python3
"""Alert benchmark: scores gpumon's alerts on the real-workload corpus against the jobs' own figures.

  alert_bench.py prepare RAW_DIR FIXTURE_DIR
      For each run RAW_DIR/RUN (scripts/gpu/workloads/corpus.py's output: recording.ndjson,
      pN.log, meta.json) writes FIXTURE_DIR/RUN/recording.ndjson.zst (zstd -19; needs the
      `zstd` command) and FIXTURE_DIR/RUN/truth.json.
  alert_bench.py rejudge FIXTURE_DIR
      Applies the rule's later cases (a leak that fragments, below) to FIXTURE_DIR/RUN/truth.json
      from the figures each keeps, rewriting those that change (a fixture prepared before them).
  alert_bench.py score FIXTURE_DIR [--gpumon BIN] [--holdout exclude|only|include]
                       [--format text|markdown|json] [--check]
      Runs `BIN explain --format json RUN/recording.ndjson.zst` on each run and scores its
      alerts. Runs named ho-* are the held-out set: left out unless asked (--holdout only|include).
      --check: exit 1 when a goal fails (every OOM classified right; a warning >= 20 s ahead of
      every OOM whose cause built up for >= 30 s; no warning on a healthy run).

Truth rule (from the job's own figures; allocator-probe.md, last section). At the failing request:
R the request, A allocated, P the pool (PyTorch: A + "reserved but unallocated"; JAX: pool_bytes;
CuPy: "allocated so far"), S = P - A stranded, cap the process's own cap or pool limit (PyTorch
"N allowed", JAX bytes_limit, CuPy "limit set to"), free the GPU's free memory, L = min(cap,
P + free). Figures come from the OOM text first (PyTorch's message; JAX: R from the text, A =
peak_allocated, P and cap from the job's oom line; CuPy's message), the job's oom line next,
the recording's sample at the OOM last (GPU free, holders).
  1. fragmentation  when S >= R, S >= 5 % of P and A + R <= L;
  2. pool-limit     else when there is a cap, P + R > cap and the GPU had room (free >= R or unknown);
  3. device-full    else when free < R and the process was under its own cap (none, or P + R <= cap);
  4. unknown        otherwise (reported; no alert can be right about it).
Leak (pool-limit and device-full only): the job's per-second floor of allocated (the smallest
step figure in each second) climbed (the climb rule below) for >= 20 s and by at least half the
headroom it began with (min(cap, P + free at the OOM) - the floor at the climb's start).
A leak that fragments (allocator-probe.md): an OOM the figures call fragmentation is a leak
first, class "leak" with fragmentation second, when the job's per-second floor of allocated
climbed into it by the leak rule (no class condition) or a slow leak (below) ran up to it, and
the floor rose by more than S, what sat stranded at the failure. Its truth keeps the leak's rate
and S / rate, the seconds expandable segments would have bought ("buys_s"); its build-up is the
floor's climb (the slow leak's, from its start).
Climb rule (alertbench/series.py): walking back from the last step before the OOM, the climb goes
on while nothing is released (no point more than 32 MiB above a later one) and it keeps rising
(a point 32 MiB below the climb's earliest rise is a new start; more than 5 s without one ends it).
Growing peak (pool-limit and device-full, not a leak): the per-second ceiling of the steps' own
peaks (peak_allocated, which the jobs reset every step: each line's peak is its step's) climbed by
the climb rule for >= 20 s and by at least half the headroom it began with (min(cap, P + free) -
that peak at the climb's start): what stays allocated is flat, each step needs more than the last.
build_up_s = OOM time - the climb's start (0 without one), the climb taken on: allocated's floor
(pool-limit; for a growing peak, the ceiling of the step peaks, since that is what reached the
cap), stranded's floor (fragmentation: PyTorch inactive_split_bytes, else P - A, and P - A always
under expandable segments, where inactive_split_bytes stays 0: the job's PYTORCH_ALLOC_CONF or
PYTORCH_CUDA_ALLOC_CONF in meta.json, else its start line's "alloc_conf"), the recording's GPU used
memory (device-full). A warning is required >= 20 s ahead when build_up_s >= 30.
Slow leak (truth.slow_leak, runs of minutes): the job's per-minute floor of allocated climbed,
with nothing released (no minute 32 MiB above a later one), for >= 5 minutes and >= 64 MiB,
rising in two minutes of three; it starts at its first rising minute's floor. Its run is not
healthy; a `leak` warning for the pid is scored as "slow leak warned after (minutes of climb)",
held to 3 minutes at >= 100 MiB/min and 20 minutes at >= 20 MiB/min.
near_failure (healthy runs): the job caught an OOM (num_ooms > 0) or a step's own peak allocated
came within 5 % of its binding limit (cap, else reserved + GPU free); the jobs do not log their
requests, so 5 % of the limit stands for "one request". A cache flush that succeeded is not one.

Scoring (alertbench/score.py): the OOM's failure alert is the first of level failure for its pid
at or after OOM - 5 s; its class is right when it equals the truth's. A leak is named when a
`leak` (or `rank-grows-alone`: a rank's leak said for its job) alert for the pid came before the
OOM, or the failure alert's title says "leak"; it is named first when the first warning for the
pid before the OOM is a `leak` (or `rank-grows-alone`) and the failure alert names the leak before
any other cause (class "leak" or "... after a leak") with the kept tensor as its first remedy
("Find what keeps memory alive"); a goal for every leak that fragments. Lead =
OOM time - the first warning (level suspected) before the OOM that names the pid (device-full:
or the GPU with no pid) and whose class points at the truth's cause (CAUSES in score.py).
Every warning on a healthy run is a false alarm (count and per hour recorded) unless near_failure;
on a failing run a warning that is not a lead is counted as off-cause.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from alertbench import score, truth  # noqa: E402


def prepare(raw, fixtures):
    if shutil.which("zstd") is None:
        sys.exit("alert_bench: prepare needs the zstd command (apt-get install zstd)")
    if not os.path.isdir(raw):
        sys.exit(f"alert_bench: {raw} is not a directory")
    runs = sorted(d for d in os.listdir(raw) if os.path.isfile(os.path.join(raw, d, "meta.json")))
    if not runs:
        sys.exit(f"alert_bench: no runs (RUN/meta.json) under {raw}")
    for name in runs:
        src, dst = os.path.join(raw, name), os.path.join(fixtures, name)
        os.makedirs(dst, exist_ok=True)
        try:
            t = truth.run_truth(src)
        except (OSError, ValueError, KeyError) as e:
            sys.exit(f"alert_bench: {src}: cannot read the run: {e!r}")
        rec = os.path.join(dst, "recording.ndjson.zst")
        subprocess.run(["zstd", "-19", "-q", "-f", os.path.join(src, "recording.ndjson"),
                        "-o", rec + ".tmp"], check=True)
        os.replace(rec + ".tmp", rec)
        tmp = os.path.join(dst, "truth.json.tmp")
        with open(tmp, "w") as f:
            json.dump(t, f, separators=(",", ":"))
            f.write("\n")
        os.replace(tmp, os.path.join(dst, "truth.json"))
        oom = t["oom"]
        if name.startswith("ho-"):
            print(f"{name:18} held out: truth written, not shown")
            continue
        print(f"{name:18} " + (f"{oom['class']}{' leak' if oom['leak'] else ''} build-up "
                               f"{oom['build_up_s']}s" if oom else
                               f"healthy{' near-failure' if t['near_failure'] else ''}"))


def rejudge(fixtures):
    """Applies the truth rule's later cases (truth.leak_first: a leak that fragments) to the
    fixtures' truth.json from the figures they keep (the OOM's figures, each job's per-second
    floors, the slow leak), rewriting only those that change."""
    runs = sorted(d for d in os.listdir(fixtures)
                  if os.path.isfile(os.path.join(fixtures, d, "truth.json")))
    for name in runs:
        path = os.path.join(fixtures, name, "truth.json")
        with open(path) as f:
            before = json.load(f)
        after = truth.leak_first(json.loads(json.dumps(before)))
        if after == before:
            continue
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(after, f, separators=(",", ":"))
            f.write("\n")
        os.replace(tmp, path)
        oom = after["oom"]
        print(f"{name:18} {before['oom']['class']} -> {oom['class']}, then {oom['second']}: "
              f"build-up {oom['build_up_s']}s, the stranded part buys {oom['buys_s']}s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("raw")
    p.add_argument("fixtures")
    j = sub.add_parser("rejudge")
    j.add_argument("fixtures")
    s = sub.add_parser("score")
    s.add_argument("fixtures")
    s.add_argument("--gpumon", default="target/debug/gpumon")
    s.add_argument("--holdout", choices=["exclude", "only", "include"], default="exclude")
    s.add_argument("--format", choices=["text", "markdown", "json"], default="text")
    s.add_argument("--check", action="store_true")
    a = ap.parse_args()
    if a.cmd == "prepare":
        prepare(a.raw, a.fixtures)
        return 0
    if a.cmd == "rejudge":
        rejudge(a.fixtures)
        return 0
    return score.main(a.fixtures, a.gpumon, a.holdout, a.format, a.check)


if __name__ == "__main__":
    sys.exit(main())
