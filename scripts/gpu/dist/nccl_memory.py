"""What NCCL holds outside PyTorch's pool, per rank, at each step of a job's life: the CUDA
context with a 4 MiB tensor, after init_process_group("nccl", device_id=...), after the first
all_reduce, after the first all_to_all. Between steps every rank sleeps (a barrier is itself a
collective, an all-reduce under NCCL, so it would blur the steps); rank 0 then runs `gpumon
snapshot` (NVML's device memory and the probe's pool for each rank) and nvidia-smi.
Run under torchrun with the probe (`eval "$(gpumon probe env --interval 200ms)"`); prints JSON."""
import json
import os
import subprocess
import sys
import time

import torch
import torch.distributed as dist

gpumon = sys.argv[1]
rank = int(os.environ["RANK"])
local = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
dev = torch.device("cuda", local)
x = torch.ones(1 << 20, device=dev)  # 4 MiB


def look(phase):
    torch.cuda.synchronize()
    time.sleep(2.0)  # both ranks are past the step, and the probe's file is fresh
    if rank == 0:
        snap = json.loads(subprocess.run([gpumon, "snapshot", "--format", "json"], check=True,
                                         capture_output=True, text=True).stdout)
        smi = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,gpu_uuid,used_memory",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True).stdout
        rows = []
        for p in snap["processes"]:
            pool = p.get("pool") or {}
            rows.append({"pid": p["pid"], "gpu": p["gpu_uuid"][-8:], "device": p["device_memory"],
                         "pool_reserved": pool.get("reserved"),
                         "rank": (p.get("rank") or {}).get("rank")})
        print(json.dumps({"phase": phase, "processes": rows, "nvidia_smi": smi.strip().splitlines(),
                          "torch_reserved_rank0": torch.cuda.memory_reserved(dev)}), flush=True)
    time.sleep(2.0)


look("context+4MiB")
dist.init_process_group("nccl", device_id=dev)
look("init_process_group")
dist.all_reduce(x)
look("first all_reduce")
out = torch.empty_like(x)
dist.all_to_all_single(out, x)
look("first all_to_all")
dist.all_reduce(x)
dist.all_to_all_single(out, x)
look("second of each")
dist.destroy_process_group()
