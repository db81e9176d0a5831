#!/usr/bin/env bash
# A real torchrun job through `gpumon serve` (issue 33, item 5): DDP with 2 ranks, one a GPU,
# both balanced for 15 s, then rank 0 alone keeps 64 MiB a step (~120 MiB/s) for 30 s while
# rank 1 stays flat; the job marks when its leak starts. Every 2 s this script reads /snapshot,
# /metrics and /snapshot again, and checks that:
#   - labels: each rank's gpumon_process_device_memory_bytes carries job_id="torchrun:<run id>"
#     and its rank label, and the job's series say 2 ranks and world size 2;
#   - totals: gpumon_job_device_memory_bytes is the sum of the two ranks' series, and /snapshot's
#     jobs[0].device_total when no sample came between the reads;
#   - smi: while balanced (memory stable), each rank's series equals nvidia-smi's MiB for its pid;
#   - balanced: gpumon_job_grows_alone is 0 before the leak (a 1 there, e.g. at warm-up, is a
#     false alarm to look into); leak: it is 1 with rank="0" from 12 s into the leak on.
# It prints one line per read (time, phase, each rank's MiB and nvidia-smi's, the ratio,
# grows_alone) and PASS/FAIL per check. Results in OUTDIR: reads.jsonl, serve.err, job.out.
# Usage (repo root, target/release/gpumon built, 2 GPUs): bash scripts/gpu/serve_jobs_check.sh OUTDIR (~1.5 min)
set -u
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
bin=$PWD/target/release/gpumon; o=$1; port=19478
mkdir -p "$o"
cat >"$o/ddp_leak.py" <<'PY'
import os, time, torch, torch.distributed as dist
rank = int(os.environ["RANK"]); torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
dist.init_process_group("nccl", device_id=torch.device("cuda", int(os.environ["LOCAL_RANK"])))
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4096, 4096).cuda())
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
kept, start = [], time.time()
while time.time() - start < 45:
    x = torch.randn(256, 4096, device="cuda")
    loss = model(x).square().mean(); opt.zero_grad(); loss.backward(); opt.step()
    if rank == 0 and time.time() - start > 15:
        if not kept:
            open(os.environ["LEAK_MARK"], "w").write(str(time.time()))
        kept.append(torch.empty(64 << 20, dtype=torch.uint8, device="cuda"))
    torch.cuda.synchronize(); time.sleep(0.5)
dist.destroy_process_group()
PY
"$bin" serve --listen 127.0.0.1:$port --interval 500ms 2>"$o/serve.err" &
serve=$!
LEAK_MARK=$o/leak_started python3 -m torch.distributed.run --standalone --nproc-per-node 2 \
  "$o/ddp_leak.py" >"$o/job.out" 2>&1 &
job=$!
python3 - "$port" "$job" "$o/reads.jsonl" "$o/leak_started" <<'PY'
import json, os, re, subprocess, sys, time, urllib.request
port, job, out, mark = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def alive():
    try:
        with open(f"/proc/{job}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False
line = re.compile(r'^(\w+)\{(.*)\} (\S+)$')
def labels(text):
    return dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', text))
def get(path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
        return r.read().decode()
def smi():
    q = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                       capture_output=True, text=True).stdout
    return {int(p): int(m) for p, m in (l.split(",") for l in q.strip().splitlines() if "," in l)}
t0, checks, out_f = time.time(), {"labels": [], "totals": [], "smi": [], "balanced": [], "leak": []}, open(out, "w")
while time.time() - t0 < 150 and alive():
    time.sleep(2)
    try:
        snap = json.loads(get("/snapshot?history=0"))
        metrics = get("/metrics")
        again = json.loads(get("/snapshot?history=0"))
    except OSError:
        continue
    # The scrape came from this snapshot only if none was published between the two reads.
    same = snap["taken_at_ms"] == again["taken_at_ms"]
    series = [(m.group(1), labels(m.group(2)), float(m.group(3)))
              for m in map(line.match, metrics.splitlines()) if m]
    ranks = {l["rank"]: (l, v) for n, l, v in series
             if n == "gpumon_process_device_memory_bytes" and l.get("job_id")}
    per_job = {n: (l, v) for n, l, v in series if n.startswith("gpumon_job_")}
    if len(ranks) < 2 or not snap.get("jobs"):
        continue
    leak_at = float(open(mark).read()) if os.path.exists(mark) else None
    phase = "balanced" if leak_at is None else "leak"
    pids = {r: int(l["pid"]) for r, (l, _) in ranks.items()}
    nv = smi()
    mib = {r: v / 2**20 for r, (_, v) in ranks.items()}
    smi_ok = all(abs(mib[r] - nv.get(pids[r], -1)) <= 1 for r in mib)
    jid = {l["job_id"] for l, _ in ranks.values()}
    checks["labels"].append(len(jid) == 1 and next(iter(jid)).startswith("torchrun:")
                            and sorted(ranks) == ["0", "1"]
                            and per_job.get("gpumon_job_ranks", ({}, 0))[1] == 2
                            and per_job.get("gpumon_job_world_size", ({}, 0))[1] == 2)
    total = per_job.get("gpumon_job_device_memory_bytes", ({}, -1))[1]
    checks["totals"].append(total == sum(v for _, v in ranks.values())
                            and (not same or total == snap["jobs"][0]["device_total"]))
    if phase == "balanced":  # stable memory: gpumon's reading and nvidia-smi's a moment apart
        checks["smi"].append(smi_ok)
    alone = per_job.get("gpumon_job_grows_alone", ({}, None))
    ratio = per_job.get("gpumon_job_imbalance_ratio", ({}, None))[1]
    if phase == "balanced":
        checks["balanced"].append(alone[1] == 0)
    elif time.time() - leak_at > 12:  # the 10 s growth window, and a sample
        checks["leak"].append(alone[1] == 1 and alone[0].get("rank") == "0")
    rec = {"t": round(time.time() - t0, 1), "phase": phase, "job_id": sorted(jid), "mib": mib,
           "smi_mib": {r: nv.get(p) for r, p in pids.items()}, "ratio": ratio,
           "grows_alone": alone[1], "grows_alone_rank": alone[0].get("rank")}
    out_f.write(json.dumps(rec) + "\n"); out_f.flush()
    print(rec)
for name, seen in checks.items():
    print(f"{name}: {'PASS' if seen and all(seen) else 'FAIL'} ({sum(seen)}/{len(seen)} reads)")
PY
wait $job; echo "job exit $?"
kill $serve; wait $serve 2>/dev/null
tail -3 "$o/job.out"
