"""Maps and exports of PyTorch jobs that record allocation history, on a GPU machine (issue 26).

Usage: python3 scripts/gpu/history_maps_check.py OUTDIR [a b c]   (repository root; the checks
to run, all by default)

While PyTorch records allocation history the probe takes no snapshot from its own thread (one
taken there while the job allocated crashed jobs on an H100, torch 2.11): the job's main thread
takes it at its next bytecode boundary and the probe's thread maps or pickles it. This script
asks for maps and exports as gpumon does (a `<pid>.request` file every REQUEST_S seconds, from
this process) while real jobs run under the probe with GPUMON_PROBE_RECORD=1, and reports:

a) fraction (3 runs): scripts/gpu/torch_frag.py fraction, the job the crash was seen on, asked
   from the moment it records (it allocates, frees every other block, sleeps 3 s, allocates
   512 MiB, sleeps 4 s): exit status 0, and a map taken while it recorded;
b) train: a small transformer trained for TRAIN_S seconds: exit status, maps and exports
   answered, each map's took_us, the step times with no snapshot in them against the steps a
   snapshot fell in (the cost to the job's own thread), and the top site of the last map;
c) threaded: the same training in a thread the main thread joins (so the main thread runs no
   Python while it trains): no map is taken while the thread trains, the requests then are
   refused with the reason after the wait, and the job ends with 0.
Needs python3 with torch (CUDA); not the gpumon binary. The jobs' files go to a temporary
directory, the results to OUTDIR/history_maps_check.json. About 3 minutes.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOOK = os.path.join(REPO, "python", "gpumon", "probe")
REQUEST_S = 1.0
TRAIN_S = 45

TRAIN = r'''
import json, os, sys, threading, time
import torch
from torch import nn

class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln, self.att = nn.LayerNorm(d), nn.MultiheadAttention(d, 8, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        h = self.ln(x)
        x = x + self.att(h, h, h, need_weights=False)[0]
        return x + self.ff(x)

V, D, T, B = 16384, 512, 512, 16
model = nn.Sequential(nn.Embedding(V, D), *[Block(D) for _ in range(4)], nn.Linear(D, V)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
steps = []

def train(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.time()
        ids = torch.randint(0, V, (B, T), device="cuda")
        logits = model(ids)
        loss = nn.functional.cross_entropy(logits.view(-1, V), ids.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        extra = [torch.empty(int(1 + (len(steps) * 7919) % 64) << 16, device="cuda")
                 for _ in range(8)]  # odd sizes, freed at once: allocator churn
        del extra
        torch.cuda.synchronize()
        steps.append((t0, time.time()))

seconds = float(sys.argv[2])
if sys.argv[1] == "threaded":
    worker = threading.Thread(target=train, args=(seconds,))
    worker.start()
    worker.join()
else:
    train(seconds)
print("STEPS " + json.dumps(steps))
'''


def probe_doc(directory, pid):
    try:
        with open(os.path.join(directory, "%d.json" % pid)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def request(directory, pid, verb, ident):
    tmp = os.path.join(directory, ".request.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, ("gpumon.request/1 %s %d\n" % (verb, ident)).encode())
    os.close(fd)
    os.replace(tmp, os.path.join(directory, "%d.request" % pid))


def run(out, name, argv, verbs=("map",), timeout=240, from_recording=False, **extra_env):
    """Runs argv under the probe with recording on, asking for `verbs` in turn every REQUEST_S
    (with from_recording, once the probe says it records); returns the exit status, the answers
    (with each map's took_us and top site) and stdout."""
    directory = os.path.join(out, "probe-" + name)
    os.makedirs(directory, 0o700, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUMON_")}
    env.update(PYTHONPATH=HOOK, GPUMON_PROBE_DIR=directory, GPUMON_PROBE_INTERVAL_MS="200",
               GPUMON_PROBE_RECORD="1", PYTHONUNBUFFERED="1", **extra_env)
    log, stdout_path = open(os.path.join(out, name + ".log"), "w"), os.path.join(out, name + ".out")
    with open(stdout_path, "w") as stdout_file:  # a file, not a pipe nobody reads until the end
        job = subprocess.Popen(argv, env=env, stdout=stdout_file, stderr=log)
    answers, asked, ident, seen = [], {}, 1000, set()
    next_at, deadline = time.monotonic() + REQUEST_S, time.monotonic() + timeout
    while job.poll() is None and time.monotonic() < deadline:
        doc = probe_doc(directory, job.pid)
        answer = (doc or {}).get("answer")
        if answer and answer["id"] not in seen and answer["id"] in asked:
            seen.add(answer["id"])
            entry = dict(answer, asked_at=asked[answer["id"]], answered_at=time.time())
            entry["recording"] = ((doc or {}).get("recording") or {}).get("on")
            if answer["ok"] and answer["verb"] == "map":
                try:
                    with open(os.path.join(directory, answer["detail"])) as f:
                        m = json.load(f)
                    dev = [d for fw in m["frameworks"] if fw["name"] == "pytorch"
                           for d in fw["devices"]][0]
                    entry.update(took_us=m["took_us"], at_ms=m["at_ms"],
                                 top_site=(dev.get("sites") or [None])[0],
                                 free=dev.get("free"), largest_free=dev.get("largest_free"))
                except (OSError, ValueError, IndexError, KeyError) as exc:
                    entry["read_error"] = repr(exc)
            answers.append(entry)
        ready = doc is not None and (not from_recording
                                     or ((doc.get("recording") or {}).get("on") is True))
        if ready and time.monotonic() >= next_at:
            ident += 1
            request(directory, job.pid, verbs[ident % len(verbs)], ident)
            asked[ident] = time.time()
            next_at = time.monotonic() + REQUEST_S
        time.sleep(0.02)
    try:
        job.wait(timeout=max(deadline - time.monotonic(), 1))
    except subprocess.TimeoutExpired:
        job.kill()
        job.wait()
    log.close()
    with open(stdout_path) as f:
        stdout = f.read()
    with open(os.path.join(out, name + ".log")) as f:
        stderr_tail = f.read()[-1500:]
    return {"exit": job.returncode, "asked": len(asked), "answers": answers,
            "stdout": stdout, "stderr_tail": stderr_tail}


def summarise_answers(answers):
    ok = [a for a in answers if a["ok"]]
    refused = {}
    for a in answers:
        if not a["ok"]:
            refused[a["detail"][:90]] = refused.get(a["detail"][:90], 0) + 1
    return {"answered": len(answers), "ok_maps": sum(a["verb"] == "map" for a in ok),
            "ok_exports": sum(a["verb"] == "export" for a in ok), "refused": refused,
            "answered_while_recording": sum(a["recording"] is True for a in answers),
            "map_took_ms": [round(a["took_us"] / 1000, 1) for a in ok if "took_us" in a],
            "map_read_errors": [a["read_error"] for a in ok if "read_error" in a]}


def steps_of(stdout):
    lines = [l for l in stdout.splitlines() if l.startswith("STEPS ")]
    return json.loads(lines[-1][6:]) if lines else None


def step_costs(stdout, answers):
    """Median step time with no snapshot in it, against the steps a snapshot fell in."""
    steps = steps_of(stdout)
    if not steps:
        return None
    moments = [a["at_ms"] / 1000 for a in answers if a.get("at_ms")]
    hit = [e - s for s, e in steps if any(s <= m <= e for m in moments)]
    calm = sorted(e - s for s, e in steps if not any(s <= m <= e for m in moments))
    return {"steps": len(steps), "median_ms_without_snapshot": round(1000 * calm[len(calm) // 2], 2)
            if calm else None, "steps_with_snapshot_ms": [round(1000 * h, 1) for h in hit]}


def main():
    results_dir = os.path.abspath(sys.argv[1])
    os.makedirs(results_dir, exist_ok=True)
    out = tempfile.mkdtemp(prefix="gpumon-history-maps-")
    train_py = os.path.join(out, "job_train.py")
    with open(train_py, "w") as f:
        f.write(TRAIN)
    frag = os.path.join(REPO, "scripts", "gpu", "torch_frag.py")
    results = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    wanted = set(sys.argv[2:]) or {"a", "b", "c"}
    fraction = []
    for n in range(3 if "a" in wanted else 0):
        # HOLD_S: it lives on 4 s after its 512 MiB, so the answer to the last request is read
        r = run(out, "fraction-%d" % n, [sys.executable, frag, "fraction"], from_recording=True,
                HOLD_S="4")
        fraction.append(dict(summarise_answers(r["answers"]), exit=r["exit"], asked=r["asked"]))
    if "a" in wanted:
        results["a_fraction"] = {"ok": all(r["exit"] == 0 and r["ok_maps"] >= 1
                                           for r in fraction), "runs": fraction}
    if "b" in wanted:
        train(results, out, train_py)
    if "c" in wanted:
        threaded(results, out, train_py)
    with open(os.path.join(results_dir, "history_maps_check.json"), "w") as f:
        json.dump(results, f, indent=1)
    for key, value in results.items():
        print("%-11s %s" % (key, json.dumps(value)[:1500]))
    failed = [k for k, v in results.items() if isinstance(v, dict) and not v.get("ok")]
    print("FAILED: " + ", ".join(failed) if failed else "all checks passed")
    return 1 if failed else 0


def train(results, out, train_py):
    r = run(out, "train", [sys.executable, train_py, "main", str(TRAIN_S)], ("map", "export"))
    s = summarise_answers(r["answers"])
    last = [a for a in r["answers"] if a.get("top_site")]
    results["b_train"] = dict(s, ok=r["exit"] == 0 and s["ok_maps"] >= 2 and s["ok_exports"] >= 1,
                              exit=r["exit"], asked=r["asked"],
                              cost=step_costs(r["stdout"], r["answers"]),
                              top_site=last[-1]["top_site"] if last else None,
                              stderr_tail=r["stderr_tail"] if r["exit"] else "")


def threaded(results, out, train_py):
    r = run(out, "threaded", [sys.executable, train_py, "threaded", "20"])
    s, steps = summarise_answers(r["answers"]), steps_of(r["stdout"]) or [[0, 0]]
    during = [a for a in r["answers"] if a.get("at_ms") and steps[0][0] <= a["at_ms"] / 1000
              <= steps[-1][1]]
    waited = sum(n for why, n in s["refused"].items() if "main thread" in why)
    results["c_threaded"] = dict(s, ok=r["exit"] == 0 and not during and waited > 0,
                                 maps_while_training=len(during), exit=r["exit"], asked=r["asked"],
                                 stderr_tail=r["stderr_tail"] if r["exit"] else "")


if __name__ == "__main__":
    sys.exit(main())
