#!/usr/bin/env bash
# The ranks' alerts on real distributed jobs (issue 33 item 2), 2 GPUs, torchrun: each job of
# scripts/gpu/workloads/ranks.py (DDP whose rank 0 alone leaks to its 14 GiB cap, torch.load
# without map_location on every rank, a healthy FSDP job with an evaluation on every rank every
# 30 s) runs under the allocator probe (500 ms) while `gpumon record` samples every second and
# nvidia-smi lists the processes every 2 s. Then `gpumon explain` replays each recording, and a
# summary prints, per job, every alert (seconds after the job's start, class, pid, title) and:
#   ddp-rank0-leak: when rank 0 failed, how long before it `rank-grows-alone` came (goal >= 20 s),
#     the rate and time it said against rank 0's own figures, and that no `leak` came for it;
#   load-no-map: `rank-extra-context`'s bytes for rank 1 on GPU0 against nvidia-smi's;
#   fsdp-healthy: every warning (goal: none).
# Usage (repo root, target/release/gpumon built, 2 GPUs): bash scripts/gpu/ranks_check.sh OUT
# (about 6 minutes). OUT keeps the recordings (.ndjson), the jobs' logs, each rank's figures
# (OUT/MODE/rank<N>.jsonl), nvidia-smi's lists and explain's output.
set -u
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
bin=$PWD/target/release/gpumon; o=$1
mkdir -p "$o"
eval "$("$bin" probe env --interval 500ms)" || exit 1
for mode in ddp-rank0-leak load-no-map fsdp-healthy; do
    mkdir -p "$o/$mode"
    "$bin" record "$o/$mode.ndjson" --interval 1s --log "$o/$mode.log" 2>"$o/$mode.record.err" &
    rec=$!
    nvidia-smi --query-compute-apps=timestamp,pid,gpu_uuid,used_memory --format=csv,noheader,nounits \
        -lms 2000 >"$o/$mode.smi.csv" 2>/dev/null &
    smi=$!
    sleep 2
    RANKS_OUT=$o/$mode torchrun --standalone --nproc-per-node 2 \
        scripts/gpu/workloads/ranks.py "$mode" >"$o/$mode.log" 2>&1
    echo "$mode: torchrun exit $?"
    sleep 4
    kill "$rec" "$smi"; wait "$rec" "$smi" 2>/dev/null
    "$bin" explain --format json "$o/$mode.ndjson" >"$o/$mode.explain.json" 2>"$o/$mode.explain.err"
    "$bin" explain "$o/$mode.ndjson" >"$o/$mode.explain.txt" 2>>"$o/$mode.explain.err"
done
nvidia-smi --query-gpu=index,uuid --format=csv,noheader >"$o/gpus.txt"
python3 - "$o" <<'PY'
import csv, json, re, sys
o = sys.argv[1]
gpus = {u.strip(): int(i) for i, u in csv.reader(open(f"{o}/gpus.txt"))}
def ranks(mode):
    out = {}
    for r in (0, 1):
        try:
            out[r] = [json.loads(l) for l in open(f"{o}/{mode}/rank{r}.jsonl")]
        except OSError:
            out[r] = []
    return out
def at(a):
    return a["at_ms"] / 1000
for mode in ["ddp-rank0-leak", "load-no-map", "fsdp-healthy"]:
    print(f"== {mode}")
    rk = ranks(mode)
    t0 = min((l[0]["t"] for l in rk.values() if l), default=0)
    pids = {r: l[0]["pid"] for r, l in rk.items() if l}
    print("  ranks' pids:", pids)
    try:
        alerts = json.load(open(f"{o}/{mode}.explain.json"))["recordings"][0]["alerts"]
    except (OSError, ValueError, KeyError, IndexError) as e:
        print("  no explain output:", e); continue
    for a in alerts:
        print(f"  +{at(a) - t0:6.1f}s {a['level']:9} {a['class']:20} pid {a['pid']} | {a['title']}")
    if mode == "ddp-rank0-leak":
        oom = [l for l in rk[0] if l["ev"] == "oom"]
        grows = [a for a in alerts if a["class"] == "rank-grows-alone"]
        leaks = [a for a in alerts if a["class"] == "leak" and a["pid"] == pids.get(0)]
        kept = [l for l in rk[0] if l["ev"] == "step" and l.get("kept")]
        if kept:
            a0, a1 = kept[0], kept[-1]
            print(f"  rank 0's allocated rose {(a1['allocated'] - a0['allocated']) / 1e6 / max(1e-3, a1['t'] - a0['t']):.0f} MB/s"
                  f" from +{a0['t'] - t0:.1f}s (its own figures)")
        if oom:
            print(f"  rank 0 failed at +{oom[0]['t'] - t0:.1f}s: {oom[0]['text'][:150]}")
        for a in grows[:1]:
            said = re.search(r"in about (\d+)(s|m)", a["title"])
            print(f"  rank-grows-alone at +{at(a) - t0:.1f}s, pid {a['pid']}, "
                  f"{(oom[0]['t'] - at(a)) if oom else float('nan'):.1f}s before the failure (goal >= 20 s); "
                  f"said {said.group(0) if said else '?'}")
        print(f"  leak alerts for rank 0: {len(leaks)} (goal: 0, the job's alert stands for it)")
        print(f"  rank-grows-alone alerts: {len(grows)} (goal: 1)")
    if mode == "load-no-map":
        extra = [a for a in alerts if a["class"] == "rank-extra-context"]
        print(f"  rank-extra-context alerts: {len(extra)} (goal: 1)")
        for a in extra[:1]:
            for e in a["evidence"][:3]:
                print("    -", e)
        rows = list(csv.reader(open(f"{o}/{mode}.smi.csv")))
        for r, pid in pids.items():
            seen = {}
            for row in rows:
                if len(row) == 4 and row[1].strip() == str(pid):
                    seen[gpus.get(row[2].strip(), row[2].strip())] = row[3].strip()
            print(f"  nvidia-smi, rank {r} pid {pid}: MiB by GPU index (last seen) {seen}")
    if mode == "fsdp-healthy":
        warns = [a for a in alerts if a["level"] in ("suspected", "failure")]
        print(f"  warnings: {len(warns)} (goal: 0)")
        for r, l in rk.items():
            steps = [x["allocated"] for x in l if x["ev"] in ("step", "eval")]
            if steps:
                print(f"  rank {r}: allocated {min(steps) / 2**30:.2f}..{max(steps) / 2**30:.2f} GiB over {len(steps)} lines")
PY
