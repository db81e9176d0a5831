"""A DDP job (one process a GPU) whose rank LEAK_RANK keeps part of every step's output "for
evaluation" until it reaches its cap (torch.cuda.set_per_process_memory_fraction, CAP_GIB): its
OOM is the job's root cause, the other ranks' ends its consequences. Started by torchrun, or rank
by rank (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set by hand); NCCL_TIMEOUT_S sets the process
group's timeout (the watchdog's). Standard PyTorch only; no data or model to download."""
import datetime
import os
import time

import torch
import torch.distributed as dist

rank = int(os.environ["RANK"])
local = int(os.environ.get("LOCAL_RANK", rank))
torch.cuda.set_device(local)
cap = float(os.environ.get("CAP_GIB", "14")) * 2**30
total = torch.cuda.get_device_properties(local).total_memory
torch.cuda.set_per_process_memory_fraction(min(cap / total, 1.0), local)
timeout = datetime.timedelta(seconds=int(os.environ.get("NCCL_TIMEOUT_S", "600")))
dist.init_process_group("nccl", timeout=timeout, device_id=torch.device("cuda", local))
leak_rank = int(os.environ.get("LEAK_RANK", "0"))
model = torch.nn.Sequential(
    torch.nn.Linear(4096, 8192), torch.nn.GELU(), torch.nn.Linear(8192, 4096)
).cuda()
ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local])
opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
kept = []
for step in range(100_000):
    x = torch.randn(2048, 4096, device="cuda")
    out = ddp(x)
    loss = out.float().pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if rank == leak_rank:
        kept.append(out.detach().clone())  # ~32 MiB a step, never released
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f} allocated {torch.cuda.memory_allocated() >> 20} MiB", flush=True)
    time.sleep(0.2)
