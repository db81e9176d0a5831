#!/usr/bin/env bash
# The allocator probe on two GPUs: a job on physical GPU 1 through CUDA_VISIBLE_DEVICES=1 (its
# visible ordinal 0 must map to GPU 1's UUID), and a two-process torchrun (one file per worker,
# each on its own GPU). Usage (repo root, target/release/gpumon, 2 GPUs): bash probe_multi_gpu.sh OUT
set -u
export PYTHONDONTWRITEBYTECODE=1  # python run in place leaves no __pycache__ in the checkout
export PYTHONUNBUFFERED=1
o=$1; mkdir -p "$o"; bin=$PWD/target/release/gpumon
nvidia-smi --query-gpu=index,uuid --format=csv,noheader | tee "$o/gpus.txt"
eval "$("$bin" probe env --interval 250ms)"
cat >/tmp/hold.py <<'PY'
import os, time, torch
d = int(os.environ.get("LOCAL_RANK", "0"))
torch.cuda.set_device(d)
x = torch.empty((1 + d) * 2**30, dtype=torch.uint8, device="cuda")
print("rank", d, "visible", os.environ.get("CUDA_VISIBLE_DEVICES"), "uuid", torch.cuda.get_device_properties(d).uuid, flush=True)
time.sleep(12)
PY
CUDA_VISIBLE_DEVICES=1 python3 /tmp/hold.py >"$o/visible1.log" 2>&1 &
sleep 8
"$bin" snapshot --format json >"$o/visible1.json"; wait
torchrun --standalone --nproc-per-node 2 /tmp/hold.py >"$o/torchrun.log" 2>&1 &
sleep 10
ls -l "$GPUMON_PROBE_DIR" >"$o/files.txt"; "$bin" snapshot --format json >"$o/torchrun.json"; wait
python3 - "$o" <<'PY'
import json, sys
o = sys.argv[1]
for name in ["visible1", "torchrun"]:
    d = json.load(open(f"{o}/{name}.json"))
    idx = {g["uuid"]: g["index"] for g in d["gpus"]}
    for p in d["processes"]:
        pool = p.get("pool")
        print(name, "pid", p["pid"], "NVML GPU", idx.get(p["gpu_uuid"]), "device MiB", (p["device_memory"] or 0) >> 20,
              "pool", None if not pool else (pool["framework"], (pool["reserved"] or 0) >> 20, "MiB held"),
              "n/a:" + p.get("unavailable", {}).get("pool", "") if not pool else "")
PY
cat "$o/files.txt" "$o/visible1.log" "$o/torchrun.log" | head -20
