"""JAX allocation failures on demand (set XLA_PYTHON_CLIENT_MEM_FRACTION before running).

modes: limit  ask for more than the preallocated pool holds -> pool-limit OOM.
       frag   fill the pool with 100 MB arrays, free every other, ask for a block larger than
              the largest hole -> BFC fragmentation OOM.
       prealloc  default preallocation (75%), small work in a loop for HOLD_S seconds (demo).
"""
import os, sys, time
import jax, jax.numpy as jnp

mode = sys.argv[1]
print(f"jax {jax.__version__} pid {os.getpid()} mode {mode}", flush=True)
MB = 10**6
try:
    if mode == "limit":
        x = jnp.ones((1200 * MB // 4,), jnp.float32).block_until_ready()
        y = jnp.ones((1200 * MB // 4,), jnp.float32).block_until_ready()
    elif mode == "frag":
        arrs = [jnp.ones((100 * MB // 4,), jnp.float32).block_until_ready() for _ in range(int(os.environ.get("N", "30")))]
        del arrs[1::2]
        time.sleep(1)
        big = jnp.ones((int(os.environ.get("BIG_MB", "1200")) * MB // 4,), jnp.float32).block_until_ready()
    elif mode == "prealloc":
        k = jax.random.PRNGKey(0)
        a = jax.random.normal(k, (2048, 2048))
        end = time.time() + float(os.environ.get("HOLD_S", "60"))
        while time.time() < end:
            a = jnp.tanh(a @ a.T / 2048.0).block_until_ready()
            time.sleep(0.2)
except Exception as e:
    print(f"{type(e).__module__}.{type(e).__name__}: {e}", file=sys.stderr, flush=True)
