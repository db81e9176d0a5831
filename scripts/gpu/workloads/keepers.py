"""Jobs whose helper keeps a little of every step (issue 34: a leak that fragments).

modes:
  gpt2-keep-slices  GPT-2 (6 layers, built from its config with random weights), batch 8x512,
                    AdamW, capped at CAP_GIB (16) GiB with set_per_process_memory_fraction; a helper
                    keeps `self.by_step[step] = logits[:, -8:, :].clone()` every step (13 MB a step,
                    for a metric computed later). The slices sit between each step's activation
                    blocks and split the segments around them, so the pool's stranded part grows
                    with the leak -> an OOM that looks like fragmentation ("reserved but
                    unallocated" large) but is a leak. Runs at its own pace (about 15 steps a second
                    on an H100), at most RUN_S (300) seconds.
  jax-keep-maps     JAX (the runner sets XLA_PYTHON_CLIENT_PREALLOCATE=false and
                    XLA_PYTHON_CLIENT_MEM_FRACTION=0.15): a jitted MLP training step whose helper
                    keeps a copy of each step's hidden activations in a list (KEEP_MIB, 16 MiB a
                    step, STEP_S 0.1 s between steps) until the pool's limit refuses one -> OOM.
                    It imports jax.profiler (as a job that profiles does) so the probe's block
                    maps can name the line that keeps them.
Each job prints wl.py's JSON lines (the truth scripts/alert_bench.py scores against) and the
framework's own OOM text on stderr."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wl  # noqa: E402

mode = sys.argv[1]
run_s = wl.env_f("RUN_S", 300)


class Keeper:
    """Keeps a little of every step for a metric computed at the end: the bug (on the GPU)."""

    def __init__(self):
        self.by_step = {}
        self.acts = []

    def remember(self, step, logits):
        self.by_step[step] = logits[:, -8:, :].clone()

    def keep(self, hidden):
        self.acts.append(hidden * 1.0)


def gpt2_keep_slices():
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    t = wl.Torch()
    wl.emit(ev="start", mode=mode, pid=os.getpid(), torch=torch.__version__,
            alloc_conf=os.environ.get("PYTORCH_ALLOC_CONF")
            or os.environ.get("PYTORCH_CUDA_ALLOC_CONF"))
    dev = torch.device("cuda")
    torch.manual_seed(0)
    t.cap(wl.env_f("CAP_GIB", 16))
    cfg = GPT2Config(n_layer=6, n_embd=768, n_head=12, n_positions=1024)
    model = GPT2LMHeadModel(cfg).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    keeper = Keeper()
    for i in wl.run_for(run_s):
        ids = torch.randint(0, cfg.vocab_size, (8, 512), device=dev)
        try:
            out = model(input_ids=ids, labels=ids)
            out.loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            keeper.remember(i, out.logits)
            del out
            torch.cuda.synchronize()
        except torch.OutOfMemoryError as e:
            t.oom(e)
        t.step(i, batch=8, seq=512, kept=len(keeper.by_step))


def jax_keep_maps():
    import jax
    import jax.numpy as jnp
    import jax.profiler  # noqa: F401  (loaded, as in a job that profiles: the probe's maps use it)

    j = wl.Jax()
    wl.emit(ev="start", mode=mode, pid=os.getpid(), jax=jax.__version__)
    keep = int(wl.env_f("KEEP_MIB", 16) * wl.MiB) // (1024 * 4)
    key = jax.random.PRNGKey(0)
    k1, k2, k3 = jax.random.split(key, 3)
    params = {"w1": jax.random.normal(k1, (1024, 4096)) * 0.02,
              "w2": jax.random.normal(k2, (4096, keep)) * 0.02,
              "w3": jax.random.normal(k3, (keep, 1024)) * 0.02}

    def loss_fn(p, x):
        h = jnp.tanh(jnp.tanh(x @ p["w1"]) @ p["w2"])
        return jnp.mean((h @ p["w3"] - x) ** 2), h

    @jax.jit
    def train_step(p, x):
        (loss, h), g = jax.value_and_grad(loss_fn, has_aux=True)(p, x)
        return jax.tree_util.tree_map(lambda a, b: a - 1e-3 * b, p, g), loss, h

    keeper = Keeper()
    try:
        for i in wl.run_for(run_s):
            x = jax.random.normal(jax.random.fold_in(key, i), (1024, 1024))
            params, loss, hidden = train_step(params, x)
            keeper.keep(hidden)
            keeper.acts[-1].block_until_ready()
            j.step(i, kept=len(keeper.acts))
            time.sleep(wl.env_f("STEP_S", 0.1))
    except Exception as e:  # XLA raises its own runtime error type for RESOURCE_EXHAUSTED
        if "RESOURCE_EXHAUSTED" in str(e) or "Out of memory" in str(e):
            j.oom(e)
        raise


if mode == "gpt2-keep-slices":
    gpt2_keep_slices()
elif mode == "jax-keep-maps":
    jax_keep_maps()
else:
    sys.exit(f"unknown mode {mode}")
wl.emit(ev="end", pid=os.getpid())
