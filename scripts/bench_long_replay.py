#!/usr/bin/env python3
"""Cost of replaying a long recording: peak RSS and time of `gpumon snapshot --replay FILE`, and the
screen's time to its first frame and peak RSS under tmux with `gpumon --replay FILE`.

The recording is generated from the demo's shapes (assets/demo.ndjson): a few GPUs, jobs that start,
grow in steps, hold and exit (tens of processes over the run, about a dozen at once), the demo's OOM
failures now and then. It is written to a temporary directory, with a `.zst` copy made by the `zstd`
command when it is on PATH (skipped otherwise). Plain Python, standard library only; tmux for the
screen part.

usage: bench_long_replay.py [--bin target/release/gpumon] [--samples 200000] [--gpus 4]
                            [--slots 3] [--screen-seconds 15] [--keep DIR]
       bench_long_replay.py --week [--days 7] [--interval-ms 10000] [--gpus 4] [--slots 3]

--week: a simulated week instead (history that reaches back days): on each GPU `--slots` jobs
that run the whole time, each probed (allocator pool figures: allocated, reserved, stranded,
peak) with steps, an evaluation every 30 minutes, and one of them leaking 20 MiB an hour; then
the peak RSS of `gpumon snapshot --replay`, with every ring and coarse tier full, against the
bytes the tiers hold by design (docs/guide/history.md). Only `snapshot --replay` is measured.
"""
import argparse, copy, json, os, random, resource, shutil, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GIB = 1 << 30


def demo_shapes():
    with open(os.path.join(ROOT, "assets", "demo.ndjson")) as f:
        lines = [json.loads(l) for l in f if l.strip()]
    header, samples = lines[0], lines[1:]
    gpu = samples[0]["gpus"][0]
    procs = [p for s in samples for p in s["processes"]]
    failures = [f for s in samples for f in s.get("failures", [])]
    return header, gpu, procs, failures


def generate(path, n, gpus, slots, interval_ms):
    """Writes an n-sample recording; returns its size in bytes."""
    rng = random.Random(14)
    header, gpu0, procs, failures = demo_shapes()
    header = dict(header, interval_ms=interval_ms)
    uuids = [f"GPU-55c380d6-235f-44c0-6f6d-7d86712{i:05x}" for i in range(gpus)]
    total = gpu0["memory"]["total"]
    t0 = header.get("at_ms", 1795321828415)
    next_pid = [10_000]

    def job(g, at):
        p = copy.deepcopy(rng.choice(procs))
        next_pid[0] += rng.randint(1, 40)
        p.update(pid=next_pid[0], gpu_uuid=uuids[g], start_time=at // 1000)
        # (end sample, device memory now, its ceiling, chance of a step per sample)
        life = rng.randint(2_000, 40_000)
        return [p, life, rng.randint(1, 8) * GIB // 2, rng.randint(4, 20) * GIB // 2, 0.01]

    at = t0
    live = {g: [job(g, at) for _ in range(slots)] for g in range(gpus)}
    with open(path, "w") as out:
        out.write(json.dumps(header, separators=(",", ":")) + "\n")
        for i in range(n):
            at += interval_ms + rng.randint(-15, 15)
            sample_gpus, sample_procs = [], []
            for g in range(gpus):
                jobs = live[g]
                for k, j in enumerate(jobs):
                    j[1] -= 1
                    if j[1] <= 0:
                        jobs[k] = j = job(g, at)
                    if j[2] < j[3] and rng.random() < j[4]:
                        j[2] = min(j[3], j[2] + GIB // 4)
                    j[0]["device_memory"] = j[2]
                    j[0]["rss"] = j[2] // 20 + 300 << 20
                    sample_procs.append(j[0])
                used = min(total, sum(j[2] for j in jobs) + (500 << 20))
                g_s = copy.copy(gpu0)
                g_s.update(uuid=uuids[g], index=g, utilization=rng.randint(0, 100),
                           memory=dict(gpu0["memory"], used=used, free=total - used))
                sample_gpus.append(g_s)
            fails = []
            if failures and i % 7_200 == 7_199:
                fails = [dict(f, at_ms=at) for f in failures]
            s = {"at_ms": at, "gpus": sample_gpus, "processes": sample_procs, "failures": fails}
            out.write(json.dumps(s, separators=(",", ":")) + "\n")
    return os.path.getsize(path)


def generate_week(path, days, gpus, slots, interval_ms):
    """A recording of `days` days: every job lives the whole time, probed; returns samples."""
    header, gpu0, procs, _ = demo_shapes()
    header = dict(header, interval_ms=interval_ms)
    uuids = [f"GPU-55c380d6-235f-44c0-6f6d-7d86712{i:05x}" for i in range(gpus)]
    total = gpu0["memory"]["total"]
    t0 = header.get("at_ms", 1795321828415)
    base = next(p for p in procs if p.get("pool"))
    jobs = []
    for g in range(gpus):
        for k in range(slots):
            p = copy.deepcopy(base)
            p.update(pid=20_000 + g * 100 + k, gpu_uuid=uuids[g], start_time=t0 // 1000)
            jobs.append((g, k, p))
    n = days * 86_400_000 // interval_ms
    with open(path, "w") as out:
        out.write(json.dumps(header, separators=(",", ":")) + "\n")
        for i in range(n):
            ms = i * interval_ms
            at = t0 + ms
            used = [500 << 20] * gpus
            sample_procs = []
            for g, k, p in jobs:
                leak = ms * (20 << 20) // 3_600_000 if (g, k) == (0, 0) else 0
                evaluating = ms % 1_800_000 < 240_000
                alloc = 4 * GIB + leak + (i * 7919 % 5) * (128 << 20) + (GIB if evaluating else 0)
                reserved = max(alloc + GIB, 7 * GIB + leak)
                p["device_memory"] = reserved + (500 << 20)
                p["pool"] = dict(p["pool"], framework="pytorch", at_ms=at, allocated=alloc,
                                 reserved=reserved, cached_free=reserved - alloc, stranded=0,
                                 limit=None, peak_allocated=alloc + GIB, alloc_retries=0, ooms=0)
                used[g] += p["device_memory"]
                sample_procs.append(p)
            sample_gpus = []
            for g in range(gpus):
                g_s = copy.copy(gpu0)
                g_s.update(uuid=uuids[g], index=g, memory=dict(gpu0["memory"], used=used[g],
                                                               free=total - used[g]))
                sample_gpus.append(g_s)
            s = {"at_ms": at, "gpus": sample_gpus, "processes": sample_procs, "failures": []}
            out.write(json.dumps(s, separators=(",", ":")) + "\n")
    return n


def week(args, binary, work):
    path = os.path.join(work, f"week-{args.days}d-{args.interval_ms}ms.ndjson")
    if not os.path.exists(path):
        t = time.monotonic()
        n = generate_week(path, args.days, args.gpus, args.slots, args.interval_ms)
        print(f"generated {n} samples in {time.monotonic() - t:.0f} s", file=sys.stderr)
    procs = args.gpus * args.slots
    # Coarse tiers: 2160 + 4320 buckets of 12 bytes per series; a probed process has five
    # tiered series (device memory, allocated, reserved, stranded, peak), a GPU one.
    tiers = (2160 + 4320) * 12
    design = (procs * 5 + args.gpus) * tiers
    took, rss, code = snapshot(binary, path)
    print(f"binary {binary}")
    print(f"{os.path.basename(path)} ({os.path.getsize(path) / 1e6:.0f} MB): {args.days} days, "
          f"{args.gpus} GPUs, {procs} probed processes")
    print(f"  snapshot --replay: {took:.1f} s, peak RSS {rss / 1024:.1f} MB, exit {code}")
    print(f"  coarse tiers by design: {design / 1e6:.2f} MB ({tiers} B per series at full history)")


def snapshot(binary, path):
    """(seconds, peak RSS in KiB, exit code) of `gpumon snapshot --replay path`."""
    start = time.monotonic()
    child = subprocess.Popen([binary, "snapshot", "--replay", path, "--format", "json"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    while child.poll() is None:
        peak = max(peak, vm_hwm(child.pid))
        time.sleep(0.05)
    took = time.monotonic() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    err = child.stderr.read().decode(errors="replace").strip()
    if child.returncode != 0:
        print(f"  snapshot failed ({child.returncode}): {err}", file=sys.stderr)
    # ru_maxrss is the largest of all children so far; VmHWM polled is this child's own.
    return took, max(peak, 0) or usage, child.returncode


def vm_hwm(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tmux(*args):
    return subprocess.run(["tmux", *args], capture_output=True, text=True)


def screen(binary, path, seconds, speed):
    """(seconds to the first frame with a GPU bar, peak RSS in KiB) of the screen under tmux."""
    name = f"gpumon-bench-{os.getpid()}"
    err = path + ".screen-stderr"
    cmd = f"exec env LANG=C.UTF-8 {binary} --replay {path} --speed {speed} 2>{err}"
    start = time.monotonic()
    if tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "40", cmd).returncode != 0:
        return None, None
    try:
        pane = tmux("display-message", "-p", "-t", name, "#{pane_pid}").stdout.strip()
        if not pane:
            with open(err) as f:
                print(f"  screen exited: {f.read().strip()}", file=sys.stderr)
            return None, None
        pid = int(pane)
        first, peak = None, 0
        deadline = start + 600
        while time.monotonic() < deadline:
            peak = max(peak, vm_hwm(pid))
            if first is None:
                text = tmux("capture-pane", "-p", "-t", name).stdout
                if "GPU0" in text:
                    first = time.monotonic() - start
                    deadline = time.monotonic() + seconds
            time.sleep(0.05)
        return first, peak
    finally:
        tmux("kill-session", "-t", name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "gpumon"))
    ap.add_argument("--samples", type=int, default=200_000)
    ap.add_argument("--gpus", type=int, default=4)
    ap.add_argument("--slots", type=int, default=3, help="jobs at once on each GPU")
    ap.add_argument("--interval-ms", type=int, default=None,
                    help="sampling interval (default 500; with --week 10000)")
    ap.add_argument("--screen-seconds", type=float, default=15,
                    help="how long the screen replays after its first frame")
    ap.add_argument("--speed", default="1000", help="replay speed on the screen")
    ap.add_argument("--keep", help="write the recordings here and keep them (reused if present)")
    ap.add_argument("--week", action="store_true", help="a simulated week of long-lived jobs")
    ap.add_argument("--days", type=int, default=7, help="with --week: days simulated")
    args = ap.parse_args()
    if args.interval_ms is None:
        args.interval_ms = 10_000 if args.week else 500
    binary = os.path.abspath(args.bin)
    work = args.keep or tempfile.mkdtemp(prefix="gpumon-long-")
    os.makedirs(work, exist_ok=True)
    if args.week:
        try:
            week(args, binary, work)
        finally:
            if not args.keep:
                shutil.rmtree(work, ignore_errors=True)
        return
    try:
        path = os.path.join(work, f"long-{args.samples}.ndjson")
        if not os.path.exists(path):
            t = time.monotonic()
            generate(path, args.samples, args.gpus, args.slots, args.interval_ms)
            print(f"generated in {time.monotonic() - t:.0f} s", file=sys.stderr)
        files = [path]
        if shutil.which("zstd"):
            zst = path + ".zst"
            if not os.path.exists(zst):
                subprocess.run(["zstd", "-q", "-3", "-f", path, "-o", zst], check=True)
            files.append(zst)
        else:
            print("zstd not on PATH: no .zst copy measured", file=sys.stderr)
        print(f"binary {binary} ({os.path.getsize(binary) / 1e6:.1f} MB)")
        for f in files:
            size = os.path.getsize(f) / 1e6
            took, rss, code = snapshot(binary, f)
            print(f"{os.path.basename(f)} ({size:.0f} MB, {args.samples} samples):")
            print(f"  snapshot --replay: {took:.1f} s, peak RSS {rss / 1024:.1f} MB, exit {code}")
            if shutil.which("tmux"):
                first, peak = screen(binary, f, args.screen_seconds, args.speed)
                if first is None:
                    print("  screen: no first frame")
                else:
                    print(f"  screen --replay --speed {args.speed}: first frame {first:.2f} s, "
                          f"peak RSS {peak / 1024:.1f} MB over {args.screen_seconds:.0f} s")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
