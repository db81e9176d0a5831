#!/usr/bin/env python3
"""Cost of PID churn (a host running many short jobs): time and peak RSS of gpumon reading a
recording of `--samples` samples, each listing `--per-sample` processes that were never seen
before (every one exits by the next sample), and of `gpumon diff` between two snapshots of
`--diff-sizes` processes each.

Measured: `explain REC`, `snapshot --replay REC --format text`, `serve --replay REC` (the time
until /healthz says the recording ended, then one /metrics scrape, and the server's peak RSS),
and `diff A B` for each size. The files are written to a temporary directory (kept with --keep).
Plain Python, standard library only.

usage: bench_pid_churn.py [--bin target/release/gpumon] [--samples 300] [--per-sample 2000]
                          [--diff-sizes 50000,100000,200000,400000] [--keep DIR]
"""
import argparse, json, os, shutil, socket, subprocess, sys, tempfile, time, urllib.request

from bench_long_replay import vm_hwm  # a process's peak RSS so far (VmHWM), kB

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UUID = "GPU-e91a5d01-eed0-4321-a3ac-2714a59b27b8"
GIB = 1 << 30
T0 = 1795319012000


def header():
    return {"schema": "gpumon.recording/1", "gpumon_version": "0.1.0",
            "machine": {"host": "churn", "kernel": "6.8", "driver_version": "580.159.04",
                        "nvml_version": "13.580.159.04", "cuda_version": "13.0"},
            "interval_ms": 1000}


def process(pid, at):
    return {"pid": pid, "gpu_uuid": UUID, "kind": "compute", "device_memory": 16 << 20,
            "start_time": at // 1000, "user": "u", "command": f"python3 job.py --task {pid}",
            "vms": 8 * GIB, "rss": GIB // 2, "framework": "pytorch", "settings": {}}


def sample(at, processes):
    used = sum(p["device_memory"] for p in processes)
    total = max(80 * GIB, used + GIB)
    return {"at_ms": at, "gpus": [{
        "uuid": UUID, "index": 0, "name": "NVIDIA H100 80GB HBM3",
        "pci_bus_id": "00000000:00:06.0", "status": {"state": "ok"},
        "memory": {"total": total, "used": used, "free": total - used, "reserved": 503316480},
        "utilization": 50, "temperature_c": 40, "power_mw": 200000}],
        "processes": processes}


def generate(path, samples, per_sample):
    """A recording whose every sample lists `per_sample` new PIDs."""
    with open(path, "w") as out:
        out.write(json.dumps(header(), separators=(",", ":")) + "\n")
        for i in range(samples):
            at = T0 + i * 1000
            procs = [process(100_000 + i * per_sample + j, at) for j in range(per_sample)]
            out.write(json.dumps(sample(at, procs), separators=(",", ":")) + "\n")


def measure(argv):
    """(seconds, peak RSS in MiB, exit code) of a command run to its end."""
    start = time.monotonic()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0
    while child.poll() is None:
        peak = max(peak, vm_hwm(child.pid))
        time.sleep(0.02)
    return time.monotonic() - start, peak / 1024, child.returncode


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(binary, rec):
    """(seconds to the recording's end, /metrics seconds, peak RSS MiB) of `serve --replay`."""
    port = free_port()
    start = time.monotonic()
    child = subprocess.Popen([binary, "serve", "--listen", f"127.0.0.1:{port}", "--replay", rec,
                              "--speed", "1000"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak, ended = 0, None
    try:
        deadline = start + 600
        while time.monotonic() < deadline and child.poll() is None:
            peak = max(peak, vm_hwm(child.pid))
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
                    if r.read().decode().startswith("ok: the recording ended"):
                        ended = time.monotonic() - start
                        break
            except OSError:
                pass
            time.sleep(0.1)
        if child.poll() is not None:
            return None, None, peak / 1024
        t = time.monotonic()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as r:
            r.read()
        scrape = time.monotonic() - t
        peak = max(peak, vm_hwm(child.pid))
    finally:
        child.kill()
        child.wait()
    return ended, scrape, peak / 1024


def snapshot_of(binary, work, name, first_pid, n):
    """A snapshot of `n` running processes, pids from `first_pid`: gpumon writes one of a few
    (a recording's line is bounded at 16 MiB), and its process is copied `n` times."""
    one = os.path.join(work, f"one-{name}.ndjson")
    with open(one, "w") as out:
        out.write(json.dumps(header()) + "\n")
        out.write(json.dumps(sample(T0, [process(first_pid, T0)])) + "\n")
    small = os.path.join(work, f"small-{name}.json")
    subprocess.run([binary, "snapshot", "--replay", one, "--output", small], check=True,
                   stderr=subprocess.DEVNULL)
    with open(small) as f:
        doc = json.load(f)
    model = doc["processes"][0]
    # As `serve`'s compact /snapshot?history=0 carries it: a snapshot is at most 256 MiB.
    model.pop("history_tiers", None)
    model["unavailable"] = {}
    procs = []
    for pid in range(first_pid, first_pid + n):
        p = dict(model, pid=pid, command=f"python3 job.py --task {pid}")
        procs.append(p)
    doc["processes"] = procs
    path = os.path.join(work, f"snap-{name}.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "gpumon"))
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--per-sample", type=int, default=2000)
    ap.add_argument("--diff-sizes", default="50000,100000,200000,400000")
    ap.add_argument("--keep")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="gpumon-churn-")
    os.makedirs(work, exist_ok=True)
    try:
        rec = os.path.join(work, "churn.ndjson")
        generate(rec, args.samples, args.per_sample)
        mib = os.path.getsize(rec) / (1 << 20)
        print(f"recording: {args.samples} samples x {args.per_sample} new PIDs, {mib:.0f} MiB")
        for name, argv in [
            ("explain", [args.bin, "explain", rec]),
            ("snapshot --replay --format text",
             [args.bin, "snapshot", "--replay", rec, "--format", "text"]),
        ]:
            took, peak, code = measure(argv)
            print(f"{name:34} {took:7.2f} s  {peak:7.1f} MiB peak RSS  (exit {code})")
        ended, scrape, peak = serve(args.bin, rec)
        ended = f"{ended:7.2f} s" if ended is not None else "never"
        scrape = f"{scrape:.3f} s" if scrape is not None else "none (the server ended)"
        print(f"{'serve --replay (to its end)':34} {ended}  {peak:7.1f} MiB peak RSS; "
              f"/metrics {scrape}")
        for n in [int(x) for x in args.diff_sizes.split(",") if x]:
            sides = []
            for side in "ab":
                base = 100_000 if side == "a" else 100_000 + n // 2
                sides.append(snapshot_of(args.bin, work, f"{side}-{n}", base, n))
            took, peak, code = measure([args.bin, "diff", *sides])
            print(f"{'diff of ' + str(n) + ' processes':34} {took:7.2f} s  {peak:7.1f} MiB "
                  f"peak RSS  (exit {code})")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
