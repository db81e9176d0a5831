"""Distributed jobs for the ranks' alerts (issue 33), one process a GPU under torchrun, GPT-2 (6
layers) built from its transformers config with random weights (nothing downloaded):

  ddp-rank0-leak   DDP, every rank capped at CAP_GIB (14); after WARM_S (20) seconds of steady
                   training rank 0 alone keeps a slice of each step's logits "for evaluation", paced
                   to LEAK_MBS (130) MB a second, until it fails at its cap; rank 1 stays flat.
  load-no-map      rank 0 saves a 256 MiB tensor from cuda:0; every rank loads it back with
                   torch.load and no map_location (it lands on cuda:0) and keeps it, then trains
                   DDP steadily for RUN_S (45) seconds: rank 1 holds a second context on GPU0.
  fsdp-healthy     FSDP (fully_shard per block), steady training for RUN_S (150) seconds with an
                   evaluation every EVAL_S (30) seconds on every rank: healthy.

Each rank sets its device before anything touches a GPU (but for the load's own bug) and writes
its own figures, one JSON line a step, to RANKS_OUT/rank<N>.jsonl ({"ev": "step"|"oom", ...}):
the truth the alerts are checked against (scripts/gpu/ranks_check.sh)."""
import json
import os
import sys
import time

import torch
import torch.distributed as dist

MiB = 1 << 20
GiB = 1 << 30
mode = sys.argv[1]
rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
out_dir = os.environ.get("RANKS_OUT", ".")
dev = torch.device("cuda", local)
torch.cuda.set_device(dev)
dist.init_process_group("nccl", device_id=dev)
torch.manual_seed(rank)
lines = open(os.path.join(out_dir, f"rank{rank}.jsonl"), "a")


def env_f(name, default):
    return float(os.environ.get(name, default))


def emit(**fields):
    fields.update(t=round(time.time(), 3), rank=rank, pid=os.getpid())
    lines.write(json.dumps(fields, separators=(",", ":")) + "\n")
    lines.flush()


def figures():
    s = torch.cuda.memory_stats(dev)
    return {"allocated": s.get("allocated_bytes.all.current", 0),
            "reserved": s.get("reserved_bytes.all.current", 0),
            "stranded": s.get("inactive_split_bytes.all.current", 0),
            "ooms": s.get("num_ooms", 0)}


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_layer=6, n_embd=768, n_head=12, n_positions=1024)
    return GPT2LMHeadModel(cfg).to(dev), cfg.vocab_size


def step(model, opt, vocab, batch=8, seq=512, keep=None):
    ids = torch.randint(0, vocab, (batch, seq), device=dev)
    out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    if keep is not None:
        keep(out.logits)
    loss = out.loss.item()
    del out
    return loss


emit(ev="start", mode=mode, torch=torch.__version__, device=local)
start = time.time()
if mode == "ddp-rank0-leak":
    cap = env_f("CAP_GIB", 14) * GiB
    torch.cuda.set_per_process_memory_fraction(cap / torch.cuda.get_device_properties(dev).total_memory, dev)
    warm_s, rate = env_f("WARM_S", 20), env_f("LEAK_MBS", 130) * 1e6
    model, vocab = gpt2()
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local])
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
    kept, tokens = [], 64  # 8 x 64 x 50257 fp32 logits: 103 MB a step
    period = 8 * tokens * vocab * 4 / rate

    def keep(logits):
        if rank == 0 and time.time() - start > warm_s:
            kept.append(logits[:, -tokens:, :].detach().clone())  # "for evaluation", never freed

    i = 0
    while time.time() - start < 600:
        t0 = time.time()
        try:
            step(ddp, opt, vocab, keep=keep)
            torch.cuda.synchronize()
        except torch.OutOfMemoryError as e:
            emit(ev="oom", step=i, text=str(e).splitlines()[0][:400], **figures())
            print(f"torch.OutOfMemoryError: {e}", file=sys.stderr, flush=True)
            sys.exit(1)
        emit(ev="step", step=i, kept=len(kept), **figures())
        time.sleep(max(0.0, period - (time.time() - t0)))
        i += 1
elif mode == "load-no-map":
    path = os.path.join(out_dir, "ckpt.pt")
    if rank == 0:
        torch.save({"w": torch.randn(64 * MiB, device="cuda:0")}, path)  # 256 MiB from cuda:0
    dist.barrier()
    ckpt = torch.load(path)  # the bug: no map_location, so the tensor lands on cuda:0
    w = ckpt["w"].to(dev)
    emit(ev="loaded", on=str(ckpt["w"].device), **figures())
    model, vocab = gpt2()
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local])
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
    i = 0
    while time.time() - start < env_f("RUN_S", 45):
        step(ddp, opt, vocab)
        torch.cuda.synchronize()
        emit(ev="step", step=i, **figures())
        time.sleep(0.2)
        i += 1
elif mode == "fsdp-healthy":
    model, vocab = gpt2()
    try:
        from torch.distributed.fsdp import fully_shard
        for block in model.transformer.h:
            fully_shard(block)
        fully_shard(model)
        sharded = model
    except ImportError:
        from torch.distributed.fsdp import FullyShardedDataParallel
        sharded = FullyShardedDataParallel(model, device_id=local, use_orig_params=True)
    opt = torch.optim.AdamW(sharded.parameters(), lr=1e-4)
    i, last_eval = 0, time.time()
    while time.time() - start < env_f("RUN_S", 150):
        step(sharded, opt, vocab)
        torch.cuda.synchronize()
        emit(ev="step", step=i, **figures())
        if time.time() - last_eval > env_f("EVAL_S", 30):
            with torch.no_grad():
                for _ in range(5):
                    ids = torch.randint(0, vocab, (16, 512), device=dev)
                    sharded(input_ids=ids, labels=ids).loss.item()
            emit(ev="eval", step=i, **figures())
            last_eval = time.time()
        i += 1
else:
    sys.exit(f"unknown mode {mode}")
dist.barrier()
dist.destroy_process_group()
