#!/usr/bin/env bash
# NCCL's memory outside PyTorch's pool, per rank, step by step: the figures src/model/nccl.rs holds
# and the detail pane shows. A 2-rank torchrun job, one rank a GPU, its pool holding one 20 MiB
# segment (a 4 MiB tensor); each rank reads its own device memory from nvidia-smi (per process)
# and its pool from torch after CUDA's init, after init_process_group("nccl", device_id=…), after
# the first all_reduce and after the first all_to_all. Then, the job holding, gpumon (the probe
# on) reads both ranks: rank, job id, the NCCL backend, device memory and pool, so "outside the
# pool" can be checked against nvidia-smi.
# Usage (repo root, target/release/gpumon, 2 GPUs): bash scripts/gpu/nccl_memory.sh OUT
# Check in OUT/steps.txt: four lines a rank; OUT/summary.txt: each step's increase, the pool at
# 20 MiB throughout, and gpumon's device memory and pool equal to nvidia-smi's and torch's.
set -u
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
o=$1; mkdir -p "$o"; bin=$PWD/target/release/gpumon
nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv,noheader | tee "$o/gpus.txt"
nvidia-smi topo -m >"$o/topo.txt" 2>&1
eval "$("$bin" probe env --interval 250ms)"
job=$(mktemp /tmp/nccl_memory.XXXXXX.py)
cat >"$job" <<'PY'
import os, subprocess, sys, time
import torch, torch.distributed as dist
out = sys.argv[1]
rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
dev = torch.device("cuda", local)

def used_mib():
    # This process's device memory as nvidia-smi lists it (MiB).
    time.sleep(1.0)
    q = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                        "--format=csv,noheader,nounits"], capture_output=True, text=True).stdout
    return sum(int(m) for p, m in (l.split(", ") for l in q.splitlines() if l) if int(p) == os.getpid())

def step(name):
    torch.cuda.synchronize()
    line = "rank %d pid %d %-16s device %5d MiB  pool reserved %d MiB allocated %d MiB" % (
        rank, os.getpid(), name, used_mib(), torch.cuda.memory_reserved() >> 20,
        torch.cuda.memory_allocated() >> 20)
    with open(os.path.join(out, "steps.txt"), "a") as f:
        f.write(line + "\n")
    print(line, flush=True)

x = torch.ones(1 << 20, device=dev)          # 4 MiB: the pool takes one 20 MiB segment
step("context")
dist.init_process_group("nccl", device_id=dev)
step("init")
dist.all_reduce(x)
step("all_reduce")
y = torch.empty_like(x)
dist.all_to_all_single(y, x)
step("all_to_all")
with open(os.path.join(out, "ready.%d" % rank), "w") as f:
    f.write(str(os.getpid()))
time.sleep(15)                               # gpumon reads the ranks meanwhile
dist.barrier()
dist.destroy_process_group()
PY
rm -f "$o/steps.txt" "$o"/ready.*
torchrun --standalone --nproc-per-node 2 "$job" "$o" >"$o/torchrun.log" 2>&1 &
for _ in $(seq 120); do [ -e "$o/ready.0" ] && [ -e "$o/ready.1" ] && break; sleep 0.5; done
sleep 2
nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader >"$o/smi.txt"
"$bin" snapshot --format json >"$o/snapshot.json"
"$bin" snapshot --format text >"$o/snapshot.txt"
wait
python3 - "$o" <<'PY' | tee "$o/summary.txt"
import json, re, sys
o = sys.argv[1]
steps = {}
for l in open(o + "/steps.txt"):
    m = re.match(r"rank (\d+) pid (\d+) (\S+)\s+device\s+(\d+) MiB  pool reserved (\d+) MiB", l)
    r, pid, name, dev, res = int(m[1]), int(m[2]), m[3], int(m[4]), int(m[5])
    steps.setdefault(r, []).append((name, dev, res, pid))
for r, s in sorted(steps.items()):
    prev = None
    for name, dev, res, pid in s:
        inc = "" if prev is None else " (+%d)" % (dev - prev)
        print("rank %d %-11s %5d MiB%s, pool %d MiB, outside the pool %d MiB" % (r, name, dev, inc, res, dev - res))
        prev = dev
smi = {}
for l in open(o + "/smi.txt"):
    pid, uuid, mem = [x.strip() for x in l.split(",")]
    smi[int(pid)] = int(mem.split()[0])
d = json.load(open(o + "/snapshot.json"))
for p in d["processes"]:
    if p["pid"] not in smi:
        continue
    rank = p.get("rank") or {}
    inside = rank.get("inside") or {}
    pool = p.get("pool") or {}
    dev = (p.get("device_memory") or 0) >> 20
    res = (pool.get("reserved") or 0) >> 20
    print("gpumon pid %d: job %s rank %s/%s backend %s; device %d MiB (nvidia-smi %d), pool %d MiB, outside %d MiB"
          % (p["pid"], rank.get("job"), rank.get("rank"), rank.get("world_size"), inside.get("backend"),
             dev, smi[p["pid"]], res, dev - res))
PY
tail -5 "$o/torchrun.log"
