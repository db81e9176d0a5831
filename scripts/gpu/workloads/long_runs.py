"""Jobs whose memory builds over minutes, and healthy jobs tuned close to their cap.

modes:
  slow-leak        GPT-2 (6 layers) training that keeps a slice of every step's logits on the GPU
                   (a metric computed later), paced to LEAK_MIB_MIN (150) MiB a minute; after a
                   short uncapped warm-up it caps itself so the leak reaches the cap after about
                   LEAK_MIN (11) minutes -> OOM at the end of a slow leak.
  warmup-peaks     GPT-2 training under a CAP_GIB (12) cap whose batch grows every step (a batch-size
                   warm-up): allocated between steps stays flat, each step's peak climbs, the cache
                   is flushed to fit the later steps; paced so the cap is hit after about
                   BUILD_S (60) seconds -> OOM.
  expandable-churn PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (set by the runner) under a
                   CAP_GIB (7) cap: 8 MiB tensors fill 93 % of the cap, every other one is freed
                   over BUILD_S (30) seconds, then a 1 GiB request -> OOM with the freed holes
                   adding up to more than it asks.
  unprobed-leak    run without the allocator probe (the runner sets GPUMON_PROBE_DISABLE=1): a
                   training loop that keeps GROW_GIB (1) of every step's output, one step a second,
                   until the GPU is full -> device-full OOM at the end of a leak.
  weights-fill     loads "weights" CHUNK_MIB (512) at a time, one chunk every STEP_S (1) seconds,
                   until the GPU is full (next to a JAX job holding its preallocated pool).
  jax-idle         JAX with default preallocation (75 % of the card) that computes a little and
                   holds its pool for RUN_S seconds: almost all of the pool idle.
  near-cap-torch   GPT-2 training whose cap is set so each step's peak is about NEAR (0.93) of it:
                   healthy (cache flushes at the cap are normal).
  near-cap-jax     a JAX training loop under XLA_PYTHON_CLIENT_PREALLOCATE=false whose pool's limit
                   is set (by a measuring run first) NEAR (0.97) above the pool's own peak.
Each job prints wl.py's JSON lines (the truth scripts/alert_bench.py scores against)."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wl  # noqa: E402

mode = sys.argv[1]
MiB, GiB = wl.MiB, wl.GiB
run_s = wl.env_f("RUN_S", 60)


def torch_job():
    import torch
    torch.manual_seed(0)
    t = wl.Torch()
    wl.emit(ev="start", mode=mode, pid=os.getpid(), torch=torch.__version__)
    return torch, t


def gpt2(torch):
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_layer=6, n_embd=768, n_head=12, n_positions=1024)
    return GPT2LMHeadModel(cfg).to("cuda"), cfg.vocab_size


def step(torch, model, opt, vocab, b, s):
    ids = torch.randint(0, vocab, (b, s), device="cuda")
    out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return out


def peak_of(torch, model, opt, vocab, b, s, steps=3):
    torch.cuda.reset_peak_memory_stats()
    for _ in range(steps):
        del_out = step(torch, model, opt, vocab, b, s)
        del del_out
    torch.cuda.synchronize()
    return torch.cuda.memory_stats()["allocated_bytes.all.peak"]


if mode == "slow-leak":
    torch, t = torch_job()
    model, vocab = gpt2(torch)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    peak = peak_of(torch, model, opt, vocab, 8, 256)
    rate = wl.env_f("LEAK_MIB_MIN", 150) * MiB / 60.0
    t.cap((peak + rate * 60 * wl.env_f("LEAK_MIN", 11)) / GiB)
    kept, began, leaked = [], time.time(), 0
    try:
        for i in wl.run_for(3600):
            out = step(torch, model, opt, vocab, 8, 256)
            # The bug: a slice of every step's logits kept for a metric computed at the end.
            kept.append(out.logits[:2, -5:, :].detach().float().clone())
            leaked += kept[-1].numel() * 4
            del out
            torch.cuda.synchronize()
            t.step(i, kept=len(kept))
            # Paced so the leak grows at `rate` bytes a second.
            time.sleep(max(0.0, began + leaked / rate - time.time()))
    except torch.OutOfMemoryError as e:
        t.oom(e)
elif mode == "warmup-peaks":
    torch, t = torch_job()
    t.cap(wl.env_f("CAP_GIB", 12))
    model, vocab = gpt2(torch)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    seq = 512
    p1 = peak_of(torch, model, opt, vocab, 1, seq, steps=2)
    p2 = peak_of(torch, model, opt, vocab, 2, seq, steps=2)
    per_sample = max(MiB, p2 - p1)
    room = t.limit - p1
    build_s, step_s = wl.env_f("BUILD_S", 60), 1.0
    grow = room / per_sample / (build_s / step_s)
    try:
        for i in wl.run_for(600):
            b = 1 + int(grow * i)
            began = time.time()
            out = step(torch, model, opt, vocab, b, seq)
            del out
            torch.cuda.synchronize()
            t.step(i, batch=b, seq=seq)
            time.sleep(max(0.0, step_s - (time.time() - began)))
    except torch.OutOfMemoryError as e:
        t.oom(e)
elif mode == "expandable-churn":
    torch, t = torch_job()
    t.cap(wl.env_f("CAP_GIB", 7))
    # Fill the pool to about 93 % of the cap with 8 MiB tensors, then free every other one over
    # BUILD_S seconds (no new small tensors fill the holes), then ask for 1 GiB.
    kept = [torch.empty(8 * MiB, dtype=torch.uint8, device="cuda")
            for _ in range(int(t.limit * 0.93 / (8 * MiB)))]
    t.step(0, kept=len(kept))
    odd = list(range(1, len(kept), 2))
    steps = int(wl.env_f("BUILD_S", 30) / 0.5)
    per_step = -(-len(odd) // steps)
    try:
        for i in range(steps):
            for k in odd[i * per_step:(i + 1) * per_step]:
                kept[k] = None
            t.step(i + 1, kept=sum(x is not None for x in kept))
            time.sleep(0.5)
        batch = torch.empty(GiB, dtype=torch.uint8, device="cuda")
    except torch.OutOfMemoryError as e:
        t.oom(e, request=GiB)
elif mode == "unprobed-leak":
    torch, t = torch_job()
    grow = int(wl.env_f("GROW_GIB", 1) * GiB)
    w = torch.randn(4096, 4096, device="cuda")
    kept = []
    try:
        for i in wl.run_for(600):
            x = torch.randn(grow // 4 // 4096, 4096, device="cuda")
            kept.append(x @ w)  # the bug: every step's output stays alive
            del x
            torch.cuda.synchronize()
            t.step(i, kept=len(kept))
            time.sleep(1.0)
    except torch.OutOfMemoryError as e:
        t.oom(e)
elif mode == "weights-fill":
    torch, t = torch_job()
    chunk = int(wl.env_f("CHUNK_MIB", 512) * MiB)
    weights = []
    try:
        for i in wl.run_for(600):
            weights.append(torch.empty(chunk, dtype=torch.uint8, device="cuda"))
            t.step(i, loaded=len(weights))
            time.sleep(wl.env_f("STEP_S", 1.0))
    except torch.OutOfMemoryError as e:
        t.oom(e)
elif mode == "jax-idle":
    import jax
    import jax.numpy as jnp
    j = wl.Jax()
    wl.emit(ev="start", mode=mode, pid=os.getpid(), jax=jax.__version__)
    x = jnp.ones((1024, 1024))
    for i in wl.run_for(run_s):
        (x @ x).block_until_ready()
        j.step(i)
        time.sleep(1)
elif mode == "near-cap-torch":
    torch, t = torch_job()
    model, vocab = gpt2(torch)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    peak = peak_of(torch, model, opt, vocab, 16, 512)
    t.cap(peak / wl.env_f("NEAR", 0.93) / GiB)
    for i in wl.run_for(run_s):
        out = step(torch, model, opt, vocab, 16, 512)
        del out
        torch.cuda.synchronize()
        t.step(i)
elif mode == "near-cap-jax":
    if os.environ.get("XLA_PYTHON_CLIENT_MEM_FRACTION") is None and "NEAR_MEASURE" not in os.environ:
        # Measure the training's peak in a child first, then run under a limit just above it.
        env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false", NEAR_MEASURE="1")
        out = subprocess.run([sys.executable, __file__, mode], env=env, capture_output=True,
                             text=True, timeout=120)
        # The pool's own peak (what the allocator needed for the live peak), so the live peak
        # sits at about NEAR of the limit without the pool's rounding making it fail.
        pool_peak, total = (int(v) for v in out.stdout.split()[-2:])
        frac = pool_peak / wl.env_f("NEAR", 0.97) / total
        env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false",
                   XLA_PYTHON_CLIENT_MEM_FRACTION="%.6f" % frac)
        sys.exit(subprocess.call([sys.executable, __file__, mode], env=env))
    import jax
    import jax.numpy as jnp
    j = wl.Jax()
    measuring = os.environ.get("NEAR_MEASURE") == "1"
    if not measuring:
        wl.emit(ev="start", mode=mode, pid=os.getpid(), jax=jax.__version__)
    key = jax.random.PRNGKey(0)
    ws = [jax.random.normal(jax.random.fold_in(key, k), (4096, 4096)) for k in range(4)]

    @jax.jit
    def train_step(ws, x):
        def loss(ws):
            h = x
            for w in ws:
                h = jax.nn.relu(h @ w)
            return jnp.mean(h ** 2)
        g = jax.grad(loss)(ws)
        return [w - 1e-4 * d for w, d in zip(ws, g)]

    for i in wl.run_for(5 if measuring else run_s):
        x = jax.random.normal(jax.random.fold_in(key, 100 + i), (8192, 4096))
        ws = train_step(ws, x)
        ws[0].block_until_ready()
        if not measuring:
            j.step(i)
    if measuring:
        s = j.dev.memory_stats()
        import subprocess as sp
        total = int(sp.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits",
                            "-i", "0"], capture_output=True, text=True).stdout.split()[0]) * MiB
        print(s.get("peak_pool_bytes") or s["peak_bytes_in_use"], total)
        sys.exit(0)
else:
    sys.exit(f"unknown mode {mode}")
wl.emit(ev="end", pid=os.getpid())
