"""Two JAX processes (jax.distributed, one GPU each): process 1 exits with status 1 after the first
all-gather; process 0 goes on until JAX's coordination service finds process 1 gone (heartbeat
timeout 10 s) and ends it. Usage: python3 jax_two_processes.py PROCESS_ID PORT"""
import sys
import time

import jax
import jax.numpy as jnp
from jax.experimental import multihost_utils

pid, port = int(sys.argv[1]), int(sys.argv[2])
jax.distributed.initialize(
    coordinator_address=f"127.0.0.1:{port}",
    num_processes=2,
    process_id=pid,
    heartbeat_timeout_seconds=10,
)
x = jnp.ones((1024, 1024)) * pid
print("gathered", multihost_utils.process_allgather(x).shape, flush=True)
if pid == 1:
    print("process 1 exits now", flush=True)
    sys.exit(1)
for step in range(600):
    y = (x @ x).block_until_ready()
    print(f"step {step}", flush=True)
    time.sleep(1)
