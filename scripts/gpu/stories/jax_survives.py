"""A two-process JAX job (jax.distributed, one process a GPU) where process 1 keeps arrays past its
pool (XLA_PYTHON_CLIENT_MEM_FRACTION) but never reads the results that failed: XLA's allocator logs
that it ran out of memory, the job runs on, and both processes exit 0 after STEPS steps.
Env: JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID, STEPS (120)."""
import json
import os
import time

import jax
import jax.numpy as jnp
from jax.experimental import multihost_utils

pid = int(os.environ["JAX_PROCESS_ID"])
jax.distributed.initialize(coordinator_address=os.environ["JAX_COORDINATOR_ADDRESS"],
                           num_processes=int(os.environ["JAX_NUM_PROCESSES"]), process_id=pid)
print(json.dumps({"ev": "start", "process": pid, "os_pid": os.getpid()}), flush=True)
kept = []
for step in range(int(os.environ.get("STEPS", "120"))):
    g = multihost_utils.process_allgather(jnp.full((4,), step + pid, jnp.float32))
    if pid == 1 and step < 60:
        kept.append(jnp.ones((64, 1 << 20), jnp.float32) * step)  # 256 MiB a step, never read
    print(json.dumps({"ev": "step", "process": pid, "step": step, "sum": float(g.sum()),
                      "t": round(time.time(), 3)}), flush=True)
    time.sleep(0.25)
print(json.dumps({"ev": "done", "process": pid}), flush=True)
