"""Real PyTorch and JAX pool maps for test fixtures (issue 26): what `torch.cuda.memory._snapshot()`,
the OOM observer and `jax.profiler.device_memory_profile()` return on a GPU machine.

Usage: python3 capture_pool_maps.py OUTDIR torch|jax
torch: OUTDIR/torch-frag.pickle (384 x 8 MiB, every other freed) with torch-frag-stats.json (the
memory_stats() of the same moment); torch-oom.pickle and torch-oom.json (a 1 GiB request under a
cap, the observer's arguments and a snapshot taken inside it); torch-history.pickle (GPT-2 training
with allocation history recorded, every step's logits slice kept: a leak); torch-50k.json (cost of
_snapshot() at about 50,000 blocks). jax: jax-profile.pb.gz and jax-live.json."""
import json
import os
import pickle
import sys
import time

out, which = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
MiB, GiB = 1 << 20, 1 << 30


def dump(name, obj):
    with open(os.path.join(out, name), "wb") as f:
        pickle.dump(obj, f)


def save(name, obj):
    with open(os.path.join(out, name), "w") as f:
        json.dump(obj, f, indent=1, default=str)


if which == "torch":
    import torch
    mem = torch.cuda.memory
    # 1. Fragmentation: 384 x 8 MiB, every other one freed.
    xs = [torch.empty(8 * MiB, dtype=torch.uint8, device="cuda") for _ in range(384)]
    del xs[1::2]
    torch.cuda.synchronize()
    stats, snap = torch.cuda.memory_stats(), mem._snapshot()
    dump("torch-frag.pickle", snap)
    save("torch-frag-stats.json", {k: v for k, v in stats.items()})
    # 2. The OOM observer at a 1 GiB request under a cap just above what the pool holds.
    seen = {}

    def observer(device, alloc, device_allocated, device_free):
        t0 = time.perf_counter()
        seen["args"] = [device, alloc, device_allocated, device_free]
        seen["snapshot"] = mem._snapshot()
        seen["snapshot_ms"] = (time.perf_counter() - t0) * 1000
        seen["stats"] = torch.cuda.memory_stats()

    torch._C._cuda_attach_out_of_memory_observer(observer)
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction((stats["reserved_bytes.all.current"] + 512 * MiB) / total)
    try:
        torch.empty(GiB, dtype=torch.uint8, device="cuda")
        seen["error"] = None
    except torch.OutOfMemoryError as e:
        seen["error"] = str(e)
    if "snapshot" in seen:
        dump("torch-oom.pickle", seen.pop("snapshot"))
    save("torch-oom.json", seen)
    torch.cuda.set_per_process_memory_fraction(1.0)
    del xs
    torch.cuda.empty_cache()
    # 3. Allocation history on a GPT-2 training loop that keeps a slice of every step's logits.
    from transformers import GPT2Config, GPT2LMHeadModel
    mem._record_memory_history(max_entries=20000, stacks="python")
    cfg = GPT2Config(n_layer=4, n_embd=512, n_head=8, n_positions=512)
    model = GPT2LMHeadModel(cfg).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    kept = []
    for i in range(12):
        ids = torch.randint(0, cfg.vocab_size, (4, 256), device="cuda")
        out_ = model(input_ids=ids, labels=ids)
        out_.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        kept.append(out_.logits[:2, -5:, :].detach().clone())  # the leak
        del out_
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    snap = mem._snapshot()
    took = (time.perf_counter() - t0) * 1000
    dump("torch-history.pickle", snap)
    mem._record_memory_history(enabled=None)
    save("torch-history.json", {"snapshot_ms": took, "stats": torch.cuda.memory_stats()})
    del kept, model, opt
    torch.cuda.empty_cache()
    # 4. About 50,000 blocks: the snapshot's own cost.
    small = [torch.empty(4096 + 512 * (k % 7), dtype=torch.uint8, device="cuda") for k in range(75000)]
    del small[::3]
    torch.cuda.synchronize()
    costs = []
    for _ in range(3):
        t0 = time.perf_counter()
        snap = mem._snapshot()
        costs.append((time.perf_counter() - t0) * 1000)
    blocks = sum(len(s["blocks"]) for s in snap["segments"])
    save("torch-50k.json", {"blocks": blocks, "segments": len(snap["segments"]), "snapshot_ms": costs,
                            "pickled_bytes": len(pickle.dumps(snap))})
elif which == "jax":
    import jax
    import jax.numpy as jnp

    def make_cache(n):
        return [jnp.ones((256, 1024)) * k for k in range(n)]

    def make_big():
        return jnp.zeros((8, 512, 768), dtype=jnp.bfloat16)

    cache = make_cache(200)
    big = make_big()
    jax.block_until_ready(cache)
    t0 = time.perf_counter()
    prof = jax.profiler.device_memory_profile()
    took = (time.perf_counter() - t0) * 1000
    with open(os.path.join(out, "jax-profile.pb.gz"), "wb") as f:
        f.write(prof)
    live = jax.live_arrays()
    save("jax-live.json", {"profile_ms": took, "profile_bytes": len(prof), "live": len(live),
                           "examples": [[str(a.shape), str(a.dtype), a.nbytes] for a in live[:5]],
                           "stats": jax.devices()[0].memory_stats()})
