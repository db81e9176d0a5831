"""The allocator probe's cost to a job on a GPU, before and after the probe was split into parts
(issue 34, item 6): start-up time and a GPT-2 training step, without the probe, with the hook
given as --before (the single-file sitecustomize.py of an older gpumon) and with this checkout's
hook (python/gpumon/probe). About 2.5 minutes on an H100; prints a table, kept in OUT.

Usage (repo root, python3 with torch and CUDA; transformers optional):
  mkdir -p probe-before
  git show 66975af:python/gpumon/probe/sitecustomize.py > probe-before/sitecustomize.py
  python3 scripts/gpu/probe_startup_step.py OUT [--before probe-before] [--rounds N]

1. Start-up, `python3 -c pass` (scripts/bench_probe_startup.py, 20 runs a row): the whole
   process's wall time and what `-X importtime` gives the import of `sitecustomize`, bytecode
   cached and not, the probe off (chaining only) and on.
2. `import torch` then `torch.cuda.init()`, 5 runs a variant, interleaved: the probe's thread
   looks every 10 ms while torch imports (to queue its CUDA-init call early), so this is where
   its start costs a GPU job most.
3. A GPT-2 training step (6 layers built from its config, batch 8x512, AdamW; transformers'
   GPT2LMHeadModel, or a plain-torch model of the same size without transformers): 10 warm-up
   steps, then the median of 40, each synchronised; --rounds (default 2) processes a variant,
   interleaved. The probe writes every 1 s (the default) and each run checks its file named the
   GPU's pool.
Each hook is copied into OUT first, so the checkout gets no __pycache__."""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

IMPORT_TORCH = "import torch; torch.cuda.init(); torch.ones(1, device='cuda')"

STEP = r'''
import json, os, statistics, time
import torch
dev = torch.device("cuda")
torch.manual_seed(0)
try:
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_layer=6, n_embd=768, n_head=12, n_positions=1024)
    model, vocab = GPT2LMHeadModel(cfg).to(dev), cfg.vocab_size
    kind = "transformers GPT-2, 6 layers"
    def loss_of(ids):
        return model(input_ids=ids, labels=ids).loss
except Exception as e:  # plain torch, the same size
    from torch import nn
    vocab, d = 50257, 768
    layer = nn.TransformerEncoderLayer(d, 12, 4 * d, batch_first=True, norm_first=True)
    model = nn.Sequential(nn.Embedding(vocab, d), nn.TransformerEncoder(layer, 6),
                          nn.Linear(d, vocab)).to(dev)
    kind = "plain torch, 6 layers (%s)" % type(e).__name__
    def loss_of(ids):
        return nn.functional.cross_entropy(model(ids).view(-1, vocab), ids.view(-1))
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
ids = torch.randint(0, vocab, (8, 512), device=dev)
def step():
    loss_of(ids).backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
for _ in range(10):
    step()
torch.cuda.synchronize()
times = []
for _ in range(40):
    t0 = time.perf_counter()
    step()
    torch.cuda.synchronize()
    times.append((time.perf_counter() - t0) * 1000)
time.sleep(1.2)  # one more probe tick with the pool in use
print(json.dumps({"model": kind, "median_ms": statistics.median(times),
                  "p90_ms": sorted(times)[35], "pid": os.getpid()}))
'''


def parse_args(argv):
    if not argv or argv[0].startswith("-"):
        sys.exit(__doc__)
    out, before, rounds = os.path.abspath(argv[0]), None, 2
    rest = argv[1:]
    while rest:
        flag = rest.pop(0)
        if flag == "--before":
            before = os.path.abspath(rest.pop(0))
        elif flag == "--rounds":
            rounds = int(rest.pop(0))
        else:
            sys.exit(__doc__)
    return out, before, rounds


def hooks(out, before):
    """(label, hook directory or None) of each variant, the hooks copied into OUT."""
    found = [("without", None)]
    if before is not None:
        found.append(("before", shutil.copytree(before, os.path.join(out, "hook-before"))))
    found.append(("after", shutil.copytree(os.path.join(REPO, "python", "gpumon", "probe"),
                                           os.path.join(out, "hook-after"),
                                           ignore=shutil.ignore_patterns("__pycache__"))))
    return found


def env_for(hook, probe_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUMON_", "PYTHON"))}
    env.update(NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1",
               NVSHMEM_DISABLE_NVLS="1")
    if hook is not None:
        env.update(PYTHONPATH=hook, GPUMON_PROBE_HOOK_DIR=hook, GPUMON_PROBE_DIR=probe_dir,
                   GPUMON_PROBE_INTERVAL_MS="1000")
    return env


def run(argv, env, timeout=120):
    began = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (argv[:3], done.returncode,
                                                   done.stderr.decode()[-2000:]))
    return time.perf_counter() - began, done.stdout.decode()


def probe_named_the_pool(probe_dir, pid):
    try:
        with open(os.path.join(probe_dir, "%d.json" % pid)) as f:
            doc = json.load(f)
        return any(d.get("allocated") for fw in doc["frameworks"] if fw["name"] == "pytorch"
                   for d in fw["devices"])
    except (OSError, ValueError, KeyError):
        return False


def main():
    out, before, rounds = parse_args(sys.argv[1:])
    os.makedirs(out, exist_ok=True)
    probe_dir = os.path.join(out, "probe")
    variants = hooks(out, before)
    lines = ["python %s; %s" % (sys.version.split()[0], "before: " + before if before else
                                 "no --before: this checkout's hook only")]

    # 1. start-up of a bare interpreter (the bench script, on the copies)
    bench = [sys.executable, os.path.join(REPO, "scripts", "bench_probe_startup.py"),
             "--runs", "20"]
    for label, hook in variants[1:]:
        bench += ["--hook", "%s=%s" % (label, hook)]
    _, table = run(bench, env_for(None, probe_dir), timeout=600)
    lines += ["", "1. start-up, python3 -c pass", table.rstrip()]

    # 2. import torch and initialise CUDA
    walls = {label: [] for label, _ in variants}
    for label, hook in variants:  # a first run each: bytecode written, caches warm
        run([sys.executable, "-c", IMPORT_TORCH], env_for(hook, probe_dir))
    for _ in range(5):
        for label, hook in variants:
            wall, _ = run([sys.executable, "-c", IMPORT_TORCH], env_for(hook, probe_dir))
            walls[label].append(wall * 1000)
    lines += ["", "2. python3 -c \"%s\", 5 runs" % IMPORT_TORCH,
              "%-10s %12s %12s %12s" % ("variant", "median ms", "min ms", "max ms")]
    for label, values in walls.items():
        lines.append("%-10s %12.1f %12.1f %12.1f" % (label, statistics.median(values),
                                                      min(values), max(values)))

    # 3. GPT-2 steps
    steps = {label: [] for label, _ in variants}
    checked, model = {}, None
    for _ in range(rounds):
        for label, hook in variants:
            _, text = run([sys.executable, "-c", STEP], env_for(hook, probe_dir), timeout=300)
            result = json.loads(text.strip().splitlines()[-1])
            model = result["model"]
            steps[label].append(result)
            if hook is not None:
                checked.setdefault(label, []).append(
                    probe_named_the_pool(probe_dir, result["pid"]))
    lines += ["", "3. training step: %s, batch 8x512, AdamW; median of 40 steps a process, "
              "%d processes a variant" % (model, rounds),
              "%-10s %16s %16s %12s %18s" % ("variant", "step median ms", "each process",
                                             "p90 ms", "probe file had pool")]
    base = statistics.median(r["median_ms"] for r in steps["without"])
    for label, results in steps.items():
        med = statistics.median(r["median_ms"] for r in results)
        lines.append("%-10s %16.2f %16s %12.2f %18s   (%+.2f %% against without)" % (
            label, med, "/".join("%.2f" % r["median_ms"] for r in results),
            statistics.median(r["p90_ms"] for r in results),
            "-" if label == "without" else "%d of %d" % (sum(checked[label]),
                                                         len(checked[label])),
            (med / base - 1) * 100))
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "probe_startup_step.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "probe_startup_step.json"), "w") as f:
        json.dump({"import_torch_ms": walls, "steps": steps}, f, indent=1)
    print(text, end="")


if __name__ == "__main__":
    main()
