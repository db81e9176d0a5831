"""The probe's word on a process's rank (`distributed` in <pid>.json, issue 33) from the real
torch.distributed and JAX, on a machine with 2 GPUs: each rank compares what its probe wrote with
what its framework says, and whether the probe saw it only once the group existed and again none
after the group ended. About a minute. Prints one line per rank and a verdict; exit 1 if any
rank's probe disagrees.

Usage (repo root, python3 with torch (NCCL) and jax[cuda]):
  python3 scripts/gpu/probe_rank_check.py OUT

1. torchrun --nproc-per-node 2 (python3 -m torch.distributed.run): each rank sets its device,
   init_process_group("nccl"), one all_reduce, waits for a probe tick, compares
   {"framework": "pytorch", "backend", "rank", "world_size", "master": MASTER_ADDR:MASTER_PORT,
   "run_id": TORCHELASTIC_RUN_ID}; then destroy_process_group() and the probe must say null.
2. JAX, two processes: jax.distributed.initialize("127.0.0.1:PORT", 2, i, local_device_ids=[i])
   (no preallocation), one computation, compares {"framework": "jax", "rank": i,
   "world_size": 2, "master": the coordinator}; then jax.distributed.shutdown() and null.
The hook is this checkout's python/gpumon/probe, copied into OUT."""
import json
import os
import shutil
import socket
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

COMMON = r'''
import json, os, sys, time
def probe_doc(since_ms):
    """The first probe document read after since_ms (the probe writes every 250 ms)."""
    path = os.path.join(os.environ["GPUMON_PROBE_DIR"], "%d.json" % os.getpid())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                doc = json.load(f)
            if doc["at_ms"] > since_ms:
                return doc
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    return None
def now_ms():
    return time.time_ns() // 1000000
def report(framework, before, inside, expected, after):
    ok = before is None and inside == expected and after is None
    print("RESULT " + json.dumps({"framework": framework, "pid": os.getpid(), "ok": ok,
                                  "before": before, "probe": inside, "expected": expected,
                                  "after": after}), flush=True)
'''

TORCH = COMMON + r'''
import torch, torch.distributed as dist
rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
before = probe_doc(now_ms())["distributed"]
dist.init_process_group("nccl")
x = torch.ones(1 << 20, device="cuda")
dist.all_reduce(x)
torch.cuda.synchronize()
inside = probe_doc(now_ms())["distributed"]
expected = {"framework": "pytorch", "backend": str(dist.get_backend()), "rank": dist.get_rank(),
            "world_size": dist.get_world_size(),
            "master": "%s:%s" % (os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]),
            "run_id": os.environ.get("TORCHELASTIC_RUN_ID")}
dist.barrier()
dist.destroy_process_group()
after = probe_doc(now_ms())["distributed"]
report("pytorch", before, inside, expected, after)
'''

JAX = COMMON + r'''
import jax, jax.numpy as jnp
i, coordinator = int(sys.argv[1]), sys.argv[2]
before = probe_doc(now_ms())["distributed"]
jax.distributed.initialize(coordinator, 2, i, local_device_ids=[i])
x = jnp.ones((1024, 1024)).sum()
x.block_until_ready()
inside = probe_doc(now_ms())["distributed"]
expected = {"framework": "jax", "backend": None, "rank": jax.process_index(),
            "world_size": jax.process_count(), "master": coordinator, "run_id": None}
jax.distributed.shutdown()
after = probe_doc(now_ms())["distributed"]
report("jax", before, inside, expected, after)
'''


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = os.path.abspath(sys.argv[1])
    os.makedirs(out, exist_ok=True)
    hook = shutil.copytree(os.path.join(REPO, "python", "gpumon", "probe"),
                           os.path.join(out, "hook"), dirs_exist_ok=True,
                           ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUMON_", "PYTHONPATH"))}
    env.update(PYTHONPATH=hook, GPUMON_PROBE_HOOK_DIR=hook,
               GPUMON_PROBE_DIR=os.path.join(out, "probe"), GPUMON_PROBE_INTERVAL_MS="250",
               NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1",
               NVSHMEM_DISABLE_NVLS="1", XLA_PYTHON_CLIENT_PREALLOCATE="false")
    scripts = {}
    for name, code in (("torch_rank.py", TORCH), ("jax_rank.py", JAX)):
        scripts[name] = os.path.join(out, name)
        with open(scripts[name], "w") as f:
            f.write(code)
    results, logs = [], []
    torchrun = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
         "--master-port", str(free_port()), scripts["torch_rank.py"]],
        env=env, capture_output=True, text=True, timeout=180)
    logs.append(("torchrun", torchrun))
    coordinator = "127.0.0.1:%d" % free_port()
    jax_procs = [subprocess.Popen([sys.executable, scripts["jax_rank.py"], str(i), coordinator],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for i in range(2)]
    for i, proc in enumerate(jax_procs):
        stdout, stderr = proc.communicate(timeout=180)
        logs.append(("jax %d" % i, subprocess.CompletedProcess(proc.args, proc.returncode,
                                                               stdout, stderr)))
    for name, done in logs:
        with open(os.path.join(out, name.replace(" ", "_") + ".log"), "w") as f:
            f.write("exit %d\n--- stdout\n%s\n--- stderr\n%s" % (done.returncode, done.stdout,
                                                                 done.stderr))
        for line in done.stdout.splitlines():
            if line.startswith("RESULT "):
                results.append(json.loads(line[7:]))
        if done.returncode != 0:
            print("%s exited %d (see %s)" % (name, done.returncode, out))
    for r in results:
        print("%-8s pid %-7d %s  probe %s" % (r["framework"], r["pid"],
                                             "ok  " if r["ok"] else "DIFF", json.dumps(r["probe"])))
        if not r["ok"]:
            print("         expected %s; before the group %s, after it %s"
                  % (json.dumps(r["expected"]), r["before"], r["after"]))
    good = len(results) == 4 and all(r["ok"] for r in results)
    print("verdict: %s (%d of 4 ranks reported)" % ("every rank's probe agrees with its framework"
                                                     if good else "MISMATCH", len(results)))
    sys.exit(0 if good else 1)


if __name__ == "__main__":
    main()
