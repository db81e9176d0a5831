"""Two-rank PyTorch jobs that end in each of the stories issue 39 tells apart (one rank a GPU).

modes:
  common   started by torch.multiprocessing.spawn (no torchrun): GPT-2 (6 layers) under DDP and
           every rank keeps a slice of each step's logits (a view that keeps the whole tensor),
           capped at CAP_GIB; spawn ends the other ranks when the first fails.
  alike    the same, every rank started by hand with its launcher's variables (srun's shape):
           each rank runs out of memory of its own, within a second or two.
  stuck    under torchrun: at step STUCK_AT rank 1's data loader blocks (next_batch sleeps) while
           rank 0 waits in its all-reduce until NCCL's watchdog (NCCL_TIMEOUT_S) aborts it.
  healthy  under torchrun: the same job, balanced, RUN_S seconds (killed from outside by the
           capture script for the stop-from-outside story).
  nearcap  one process, no launcher: fills its pool to about 93 % of its cap and exits 0.
Each step prints one JSON line; failures are left uncaught, as in a real job."""
import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist

GiB = 1 << 30


def emit(**f):
    f.setdefault("t", round(time.time(), 3))
    print(json.dumps(f, separators=(",", ":")), flush=True)


def gpt2(dev):
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_layer=6, n_embd=768, n_head=12, n_positions=1024)
    torch.manual_seed(0)
    return GPT2LMHeadModel(cfg).to(dev), cfg.vocab_size


def next_batch(step, vocab, dev, rank):
    if os.environ.get("MODE") == "stuck" and rank == 1 and step == int(os.environ.get("STUCK_AT", "40")):
        time.sleep(3600)  # the data loader blocks: this rank never reaches the next all-reduce
    return torch.randint(0, vocab, (8, 512), device=dev)


def train(rank, world, keep):
    local = rank
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    if os.environ.get("CAP_GIB"):
        total = torch.cuda.get_device_properties(local).total_memory
        torch.cuda.set_per_process_memory_fraction(float(os.environ["CAP_GIB"]) * GiB / total, local)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev,
                            timeout=datetime.timedelta(seconds=float(os.environ.get("NCCL_TIMEOUT_S", "600"))))
    emit(ev="start", rank=rank, pid=os.getpid(), mode=os.environ.get("MODE"))
    model, vocab = gpt2(dev)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local])
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
    kept = []
    t0 = time.time()
    run_s = float(os.environ.get("RUN_S", "600"))
    step = 0
    while time.time() - t0 < run_s:
        x = next_batch(step, vocab, dev, rank)
        out = ddp(x, labels=x)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if keep:
            kept.append(out.logits[:, -8:])  # a view: keeps the whole logits tensor
        s = torch.cuda.memory_stats(dev)
        emit(ev="step", rank=rank, step=step, allocated=s.get("allocated_bytes.all.current", 0),
             reserved=s.get("reserved_bytes.all.current", 0))
        step += 1
    dist.destroy_process_group()


def spawned(rank, world):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world))
    train(rank, world, keep=True)


def nearcap():
    dev = torch.device("cuda", 0)
    cap = float(os.environ.get("CAP_GIB", "8")) * GiB
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(cap / total, 0)
    held = []
    while torch.cuda.memory_reserved(dev) < 0.93 * cap - 256 * (1 << 20):
        held.append(torch.empty(256 * (1 << 20), dtype=torch.uint8, device=dev))
    emit(ev="full", reserved=torch.cuda.memory_reserved(dev), cap=int(cap))
    time.sleep(float(os.environ.get("RUN_S", "20")))
    emit(ev="done")


if __name__ == "__main__":
    mode = sys.argv[1]
    os.environ["MODE"] = mode
    if mode == "common":
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29533")
        torch.multiprocessing.spawn(spawned, args=(2,), nprocs=2)
    elif mode == "nearcap":
        nearcap()
    else:
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), keep=mode == "alike")
