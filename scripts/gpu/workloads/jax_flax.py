"""JAX jobs: a flax MLP trained with optax.

modes:
  flax-train   default preallocation (75 % of the GPU), a jitted training loop: healthy.
  flax-keep    started with XLA_PYTHON_CLIENT_PREALLOCATE=false and XLA_PYTHON_CLIENT_MEM_FRACTION
               (the runner sets them): the loop keeps every step's 64 MiB of predictions, so its
               arrays grow for about 40 s until the pool's limit refuses one -> OOM.
Run for RUN_S seconds (default 20)."""
import os
import sys
import time

import jax
import jax.numpy as jnp
import flax.linen as nn
import optax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wl  # noqa: E402

mode = sys.argv[1]
run_s = wl.env_f("RUN_S", 20)
j = wl.Jax()
wl.emit(ev="start", mode=mode, pid=os.getpid(), jax=jax.__version__)


class MLP(nn.Module):
    width: int = 4096
    out: int = 1000

    @nn.compact
    def __call__(self, x):
        for _ in range(4):
            x = nn.relu(nn.Dense(self.width)(x))
        return nn.Dense(self.out)(x)


out = 1000 if mode == "flax-train" else 16384
model = MLP(out=out)
key = jax.random.PRNGKey(0)
x = jax.random.normal(key, (1024, 1024))
params = model.init(key, x)
tx = optax.adam(1e-4)
opt_state = tx.init(params)


@jax.jit
def train_step(params, opt_state, x, y):
    def loss_fn(p):
        pred = model.apply(p, x)
        return jnp.mean((pred - y) ** 2), pred
    (loss, pred), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss, pred


kept = []
try:
    y = jnp.zeros((1024, out))
    for i in wl.run_for(run_s if mode == "flax-train" else 600):
        x = jax.random.normal(jax.random.fold_in(key, i), (1024, 1024))
        params, opt_state, loss, pred = train_step(params, opt_state, x, y)
        pred.block_until_ready()
        if mode == "flax-keep":
            kept.append(pred)  # the bug: every step's predictions stay on the GPU
            time.sleep(wl.env_f("STEP_S", 0.3))
        j.step(i)
except Exception as e:  # XLA raises its own runtime error type for RESOURCE_EXHAUSTED
    if "RESOURCE_EXHAUSTED" in str(e) or "Out of memory" in str(e):
        j.oom(e)
    raise
wl.emit(ev="end", pid=os.getpid())
