"""Jobs for checking the allocator probe on a real GPU: each prints its framework's own pool
statistics as one JSON line per step ({"t": unix seconds, "stats": {...}}), so gpumon's figures
can be compared with them at the same moment.

modes:
  torch-frag  fill with 6 MiB tensors (three per 20 MiB segment) in steps, free every other one,
              wait FRAG_WAIT_S, then ask for 512 MiB under a 4 GiB per-process cap: fragmentation OOM.
  jax         a pool without preallocation, 1500 small buffers, every other freed; then hold.
  cupy        a CuPy pool with every other block freed, under set_limit; then ask past the limit.
  torch-steps a plain training-step loop (for the overhead benchmark): STEPS steps, prints the
              mean time per step at the end.
"""
import json, os, sys, time

MiB = 2**20
mode = sys.argv[1]
hold = float(os.environ.get("HOLD_S", "2"))


def say(stats):
    print(json.dumps({"t": time.time(), "pid": os.getpid(), "stats": stats}), flush=True)


if mode == "torch-frag":
    import torch
    dev = torch.device("cuda")
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(4 * 2**30 / total)
    keys = ["allocated_bytes.all.current", "reserved_bytes.all.current",
            "inactive_split_bytes.all.current", "num_alloc_retries", "num_ooms"]
    stats = lambda: {k: torch.cuda.memory_stats().get(k) for k in keys}
    keep = []
    for i in range(537):
        keep.append(torch.empty(6 * MiB, dtype=torch.uint8, device=dev))
        if i % 60 == 0:
            say(stats()); time.sleep(0.5)
    del keep[1::2]
    end = time.time() + float(os.environ.get("FRAG_WAIT_S", "8"))
    while time.time() < end:
        say(stats()); time.sleep(0.25)
    try:
        big = torch.empty(512 * MiB, dtype=torch.uint8, device=dev)
    except torch.OutOfMemoryError as e:
        print(f"torch.OutOfMemoryError: {e}", file=sys.stderr, flush=True)
        say(stats())
        time.sleep(hold)
        sys.exit(1)
elif mode == "jax":
    import jax, jax.numpy as jnp
    d = jax.local_devices()[0]
    xs = [jnp.ones((128 * 1024,), jnp.float32) + i for i in range(1500)]
    del xs[::2]
    end = time.time() + hold
    while time.time() < end:
        say(d.memory_stats()); time.sleep(0.25)
elif mode == "cupy":
    import cupy as cp
    pool = cp.get_default_memory_pool()
    pool.set_limit(size=3 * 2**30)
    arrs = [cp.ones((64 * MiB,), cp.uint8) for _ in range(40)]
    del arrs[::2]
    end = time.time() + hold
    while time.time() < end:
        say({"used": pool.used_bytes(), "total": pool.total_bytes(), "free": pool.free_bytes(),
             "limit": pool.get_limit()}); time.sleep(0.25)
    try:
        big = cp.ones((2 * 2**30,), cp.uint8)
    except Exception as e:
        print(f"{type(e).__module__}.{type(e).__name__}: {e}", file=sys.stderr, flush=True)
        sys.exit(1)
elif mode == "torch-steps":
    import torch
    dev = torch.device("cuda")
    steps = int(os.environ.get("STEPS", "2000"))
    model = torch.nn.Sequential(torch.nn.Linear(2048, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 2048)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(256, 2048, device=dev)
    for _ in range(50):
        opt.zero_grad(); model(x).square().mean().backward(); opt.step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        opt.zero_grad(); model(x).square().mean().backward(); opt.step()
    torch.cuda.synchronize()
    print(json.dumps({"steps": steps, "s_per_step": (time.perf_counter() - t0) / steps}), flush=True)
else:
    sys.exit(f"unknown mode {mode}")
