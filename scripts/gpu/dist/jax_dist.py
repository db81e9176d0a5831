"""A two-process JAX job (jax.distributed, one process a GPU) where process 1 dies: it keeps each
step's array in a list until its pool (XLA_PYTHON_CLIENT_MEM_FRACTION) runs out, while both
processes all-gather a small array every step; process 0 is then left waiting until JAX's
coordination service notices (heartbeat timeout HEARTBEAT_S, default 10) and terminates it.
Process 1 prints its error and leaves with os._exit(1): with sys.exit, JAX's exit hook would wait
in the coordination service's shutdown barrier for process 0, which waits in its all-gather, and
neither would ever end (seen on 2 H200s).
Env: JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID (passed to initialize)."""
import json
import os
import sys
import time

import jax
import jax.numpy as jnp
from jax.experimental import multihost_utils

pid = int(os.environ["JAX_PROCESS_ID"])
jax.distributed.initialize(
    coordinator_address=os.environ["JAX_COORDINATOR_ADDRESS"],
    num_processes=int(os.environ["JAX_NUM_PROCESSES"]), process_id=pid,
    heartbeat_timeout_seconds=int(os.environ.get("HEARTBEAT_S", "10")))
print(json.dumps({"ev": "start", "process": pid, "os_pid": os.getpid(),
                  "devices": [str(d) for d in jax.local_devices()]}), flush=True)
kept = []
for step in range(100000):
    x = jnp.full((4,), step + pid, jnp.float32)
    g = multihost_utils.process_allgather(x)
    if pid == 1:
        try:
            kept.append(jnp.ones((64, 1 << 20), jnp.float32) * step)  # 256 MiB a step, kept
            kept[-1].block_until_ready()
        except Exception:
            import traceback
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
    print(json.dumps({"ev": "step", "process": pid, "step": step, "sum": float(g.sum()),
                      "t": round(time.time(), 3)}), flush=True)
    time.sleep(0.2)
