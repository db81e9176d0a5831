"""Two-rank (one a GPU) PyTorch jobs for the distributed-job checks (issue 33), started by torchrun
or rank by rank with the launcher's variables set by hand (srun's shape).

modes:
  leak0    GPT-2 (6 layers, built from its config, batch 8x512, AdamW) under DDP; rank 0 alone
           keeps each step's last 8 positions of logits "for evaluation" (~13 MB a step), each
           process capped at CAP_GIB (14): rank 0 runs out of memory, rank 1 waits in its
           all-reduce until its launcher stops it or NCCL's watchdog aborts it.
  healthy  the same DDP job without the keeping: balanced, RUN_S seconds.
  load     every rank torch.load()s a tensor saved from cuda:0 without map_location (a second
           CUDA context on GPU 0 for every other rank), then trains a little: RUN_S seconds.
  fsdp     GPT-2 under FSDP (FULL_SHARD), healthy, STEPS steps (400).
Each step prints one JSON line ({"ev": "step", "rank": r, ...}: the job's own allocator figures);
the OOM is left uncaught, as in a real job. Env: CAP_GIB, RUN_S (30), NCCL_TIMEOUT_S (600)."""
import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist

mode = sys.argv[1]
rank = int(os.environ["RANK"])
local = int(os.environ.get("LOCAL_RANK", rank))
world = int(os.environ["WORLD_SIZE"])
run_s = float(os.environ.get("RUN_S", "30"))
GiB = 1 << 30


def emit(**f):
    f.setdefault("t", round(time.time(), 3))
    print(json.dumps(f, separators=(",", ":")), flush=True)


torch.cuda.set_device(local)
dev = torch.device("cuda", local)
if os.environ.get("CAP_GIB"):
    total = torch.cuda.get_device_properties(local).total_memory
    torch.cuda.set_per_process_memory_fraction(float(os.environ["CAP_GIB"]) * GiB / total, local)
dist.init_process_group(
    "nccl", device_id=dev,
    timeout=datetime.timedelta(seconds=float(os.environ.get("NCCL_TIMEOUT_S", "600"))))
emit(ev="start", mode=mode, rank=rank, world=world, pid=os.getpid(), torch=torch.__version__)


def figures():
    s = torch.cuda.memory_stats(dev)
    return {"allocated": s.get("allocated_bytes.all.current", 0),
            "reserved": s.get("reserved_bytes.all.current", 0),
            "stranded": s.get("inactive_split_bytes.all.current", 0),
            "ooms": s.get("num_ooms", 0)}


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_layer=6, n_embd=768, n_head=12, n_positions=1024)
    torch.manual_seed(0)
    return GPT2LMHeadModel(cfg).to(dev), cfg.vocab_size


def train(model, vocab, keep=None, until=None, steps=None):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    step, start = 0, time.time()
    while (until is None or time.time() - start < until) and (steps is None or step < steps):
        ids = torch.randint(0, vocab, (8, 512), device=dev)
        out = model(input_ids=ids, labels=ids)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if keep is not None:
            keep[step] = out.logits[:, -8:, :].clone()  # the bug: rank 0's "evaluation" slices
        del out
        torch.cuda.synchronize()
        emit(ev="step", rank=rank, step=step, **figures())
        step += 1


if mode in ("leak0", "healthy"):
    from torch.nn.parallel import DistributedDataParallel as DDP
    model, vocab = gpt2()
    ddp = DDP(model, device_ids=[local])
    train(ddp, vocab, keep={} if (mode == "leak0" and rank == 0) else None,
          until=None if mode == "leak0" else run_s)
elif mode == "load":
    path = "/tmp/gpumon-ddp-ckpt.pt"
    if rank == 0:
        torch.save(torch.ones(64 << 20, device="cuda:0"), path)  # 256 MiB saved from cuda:0
    dist.barrier()
    weights = torch.load(path)  # the bug: no map_location, so every rank maps it to cuda:0
    emit(ev="loaded", rank=rank, device=str(weights.device))
    from torch.nn.parallel import DistributedDataParallel as DDP
    model, vocab = gpt2()
    train(DDP(model, device_ids=[local]), vocab, until=run_s)
elif mode == "fsdp":
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    model, vocab = gpt2()
    # A fixed number of steps: every rank ends after the same collective (time-bounded loops
    # ended apart and the group's shutdown then hung, seen on 2 H200s).
    train(FSDP(model, device_id=local), vocab, steps=int(os.environ.get("STEPS", "400")))
dist.barrier()
emit(ev="end", rank=rank)
dist.destroy_process_group()
