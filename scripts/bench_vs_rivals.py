#!/usr/bin/env python3
"""Side-by-side cost of GPU monitors on a GPU machine: CPU%, peak RSS and bytes/s written to the terminal.

Each tool runs alone, one after another, in a pseudo-terminal of a fixed size for a fixed time while the
same background load runs. CPU time is the scheduler's own count, in nanoseconds, summed over the
process's threads (/proc/PID/task/*/schedstat): /proc/PID/stat's utime+stime count whole 10 ms clock
ticks, which is one or two ticks in a window for a tool using well under 1 % of a core. stat's figure
(children included) is kept as cpu_pct_stat; where it is higher by more than two clock ticks (a thread
that ended in the window takes its schedstat time with it) the larger figure is used and the row is
marked. Peak RSS from VmHWM in /proc/PID/status, bytes from what the pty delivered. Plain Python, no
packages.

With --serve, each tool is an HTTP exporter instead (NAME=URL=CMD): it runs without a terminal and is
scraped at URL every --scrape-every seconds; the table gives its CPU%, peak RSS, median and 95th
percentile scrape time and the bytes of one scrape. --both-orders runs the list, then the list
reversed, and prints both tables and each tool's mean of the two (so an order effect shows).

With --ddp-ranks N the load is a healthy N-rank DDP job under torchrun instead (one rank a GPU,
scripts/gpu/dist/ddp_job.py healthy, which needs transformers), every rank started with the allocator
probe of --gpumon BIN writing into --probe-dir, which every tool is then given as GPUMON_PROBE_DIR: the
issue-42 case (a probed job of a rank a GPU); the job is stopped, with its ranks, at the end.

usage: bench_vs_rivals.py [--seconds 30] [--cols 120] [--rows 40] [--load 2] [--both-orders] NAME=CMD ...
       bench_vs_rivals.py --ddp-ranks 4 --gpumon target/release/gpumon --load 0 --both-orders NAME=CMD ...
       bench_vs_rivals.py --serve [--seconds 30] [--load 0] [--both-orders] NAME=URL=CMD ...
  e.g. gpumon=target/release/gpumon nvtop=nvtop "nvitop=python3 -m nvitop"
       --serve "gpumon=http://127.0.0.1:9477/metrics=target/release/gpumon serve"
               "nvitop-exporter=http://127.0.0.1:8000/metrics=python3 -m nvitop_exporter --port 8000"
"""
import argparse, fcntl, os, pty, select, shlex, signal, statistics, struct, subprocess, sys, termios, time
import urllib.request

TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime, stime, cutime, cstime are fields 14-17 (1-based); after the ")" split they start at index 11
    return sum(int(x) for x in fields[11:15]) / TICK


def proc_cpu_ns(pid):
    """Nanoseconds on a CPU, summed over the process's live threads; None without schedstat."""
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue  # the thread ended between the listing and the read
            return None
    return total


class Cpu:
    """A process's CPU time at one moment, by both counts."""

    def __init__(self, pid):
        self.ns, self.s, self.t = proc_cpu_ns(pid), proc_cpu_s(pid), time.monotonic()

    def pct_since(self, start):
        """CPU % of one core since `start`: schedstat's, unless stat's is higher by more than two
        clock ticks; with stat's figure and whether it was used."""
        wall = self.t - start.t
        by_stat = 100 * (self.s - start.s) / wall
        if self.ns is None or start.ns is None:
            return by_stat, by_stat, True
        by_sched = 100 * (self.ns - start.ns) / 1e9 / wall
        if by_stat - by_sched > 100 * 2 / TICK / wall:
            return by_stat, by_stat, True
        return by_sched, by_stat, False


def peak_rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def run_tool(cmd, seconds, cols, rows):
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm-256color"
        os.environ.setdefault("LANG", "C.UTF-8")
        argv = shlex.split(cmd)
        os.execvp(argv[0], argv)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    os.kill(pid, signal.SIGWINCH)
    start = time.monotonic()
    warm_until = start + 3  # start-up output (first full frame) is not steady state
    total = steady = 0
    cpu0 = None
    while True:
        now = time.monotonic()
        if cpu0 is None and now >= warm_until:
            cpu0, steady = Cpu(pid), 0
        if now - start >= seconds + 3:
            break
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            total += len(data)
            steady += len(data)
    cpu1 = Cpu(pid)
    rss = peak_rss_kb(pid)
    os.kill(pid, signal.SIGTERM)
    time.sleep(0.5)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)
    os.close(fd)
    wall = cpu1.t - cpu0.t
    pct, by_stat, coarse = cpu1.pct_since(cpu0)
    return {"cpu_pct": pct, "cpu_pct_stat": by_stat, "coarse": coarse, "rss_mb": rss / 1024,
            "bytes_s": steady / wall, "startup_bytes": total - steady}


def stop(pid):
    try:
        os.kill(pid, signal.SIGTERM)
        time.sleep(0.5)
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def scrape(url):
    """Seconds one GET of url took and the bytes of its body; None when it failed."""
    t = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            body = r.read()
    except OSError:
        return None
    return time.monotonic() - t, len(body)


def run_server(url, cmd, seconds, every):
    """Starts the exporter, waits (at most 30 s) until url answers, lets it settle 3 s, then scrapes
    it every `every` seconds for `seconds`: its CPU% over that span, peak RSS and scrape times."""
    proc = subprocess.Popen(shlex.split(cmd), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while scrape(url) is None:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit(f"{cmd}: {url} never answered")
            time.sleep(0.2)
        time.sleep(3)
        cpu0 = Cpu(proc.pid)
        times, sizes = [], []
        while time.monotonic() - cpu0.t < seconds:
            r = scrape(url)
            if r:
                times.append(r[0])
                sizes.append(r[1])
            time.sleep(max(0.0, every - (r[0] if r else 0)))
        cpu1 = Cpu(proc.pid)
        rss = peak_rss_kb(proc.pid)
    finally:
        stop(proc.pid)
        proc.wait()
    times.sort()
    pct, by_stat, coarse = cpu1.pct_since(cpu0)
    return {"cpu_pct": pct, "cpu_pct_stat": by_stat, "coarse": coarse, "rss_mb": rss / 1024,
            "scrape_ms": 1000 * statistics.median(times) if times else float("nan"),
            "p95_ms": 1000 * times[int(0.95 * (len(times) - 1))] if times else float("nan"),
            "bytes": statistics.median(sizes) if sizes else 0, "scrapes": len(times)}


def cpu(r):
    """The CPU % column: schedstat's figure, or stat's marked with *."""
    return f"{r['cpu_pct']:>7.3f}{'*' if r['coarse'] else ' '}"


def print_table(title, rows, serve, first):
    print(f"\n{title}")
    if serve:
        print(f"{'tool':<16} {'CPU %':>8} {'stat %':>7} {'peak RSS MB':>12} {'scrape ms':>10} {'p95 ms':>8} {'bytes':>9}")
        for name, r in rows:
            print(f"{name:<16} {cpu(r)} {r['cpu_pct_stat']:>7.2f} {r['rss_mb']:>12.1f} {r['scrape_ms']:>10.2f} "
                  f"{r['p95_ms']:>8.2f} {r['bytes']:>9.0f}")
    else:
        print(f"{'tool':<16} {'CPU %':>8} {'stat %':>7} {'peak RSS MB':>12} {'bytes/s':>9}")
        for name, r in rows:
            print(f"{name:<16} {cpu(r)} {r['cpu_pct_stat']:>7.2f} {r['rss_mb']:>12.1f} {r['bytes_s']:>9.0f}")
    if any(r["coarse"] for _, r in rows):
        print("* stat's clock-tick count, higher than schedstat's (a thread ended in the window)")
    base = dict(rows)
    if first in base:
        g = base[first]
        for name, r in rows:
            if name != first:
                print(f"{first} / {name}: CPU {g['cpu_pct'] / max(r['cpu_pct'], 1e-9):.2f}x, "
                      f"RSS {g['rss_mb'] / max(r['rss_mb'], 1e-9):.2f}x")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--cols", type=int, default=120)
    ap.add_argument("--rows", type=int, default=40)
    ap.add_argument("--load", type=int, default=2, help="PyTorch processes running meanwhile")
    ap.add_argument("--serve", action="store_true", help="tools are NAME=URL=CMD exporters, scraped")
    ap.add_argument("--scrape-every", type=float, default=1.0)
    ap.add_argument("--both-orders", action="store_true", help="run the list, then reversed")
    ap.add_argument("--ddp-ranks", type=int, default=0, help="a probed N-rank torchrun DDP job meanwhile")
    ap.add_argument("--gpumon", default="target/release/gpumon", help="the gpumon whose probe the job runs")
    ap.add_argument("--probe-dir", default="/tmp/gpumon-bench/probes")
    ap.add_argument("tools", nargs="+")
    a = ap.parse_args()
    load = []
    here = os.path.dirname(os.path.abspath(__file__))
    if a.ddp_ranks:
        os.environ["GPUMON_PROBE_DIR"] = a.probe_dir
        job = (f'eval "$({shlex.quote(a.gpumon)} probe env --probe-dir {shlex.quote(a.probe_dir)})"; '
               f"RUN_S=100000 exec {shlex.quote(sys.executable)} -m torch.distributed.run --standalone "
               f"--nproc-per-node {a.ddp_ranks} {shlex.quote(here + '/gpu/dist/ddp_job.py')} healthy")
        load.append(subprocess.Popen(["bash", "-c", job], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True))
        time.sleep(45)
    for i in range(a.load):
        env = dict(os.environ, GROW_GIB=str(1 + i), HOLD_S="100000")
        load.append(subprocess.Popen([sys.executable, f"{here}/gpu/torch_frag.py", "grow"], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    if a.load:
        time.sleep(15)
    specs = [t.split("=", 2 if a.serve else 1) for t in a.tools]
    orders = [specs, specs[::-1]] if a.both_orders else [specs]
    runs = []
    try:
        for order in orders:
            rows = []
            for spec in order:
                if a.serve:
                    name, url, cmd = spec
                    res = run_server(url, cmd, a.seconds, a.scrape_every)
                else:
                    name, cmd = spec
                    res = run_tool(cmd, a.seconds, a.cols, a.rows)
                rows.append((name, res))
                print(f"{name}: {res}", flush=True)
            runs.append(rows)
    finally:
        for p in load:
            try:
                os.killpg(p.pid, signal.SIGTERM)  # the job's own group: torchrun and its ranks
            except ProcessLookupError:
                p.kill()  # a PyTorch process of --load, in this group
            p.wait()
    what = "scraped every %.1f s" % a.scrape_every if a.serve else f"at {a.cols}x{a.rows}"
    job = f"a probed {a.ddp_ranks}-rank DDP job" if a.ddp_ranks else f"{a.load} PyTorch processes"
    head = f"{a.seconds:.0f} s each {what}, {job} started here, {time.strftime('%Y-%m-%d')}"
    for i, rows in enumerate(runs):
        print_table(f"{head}; order {i + 1}" if len(runs) > 1 else head, rows, a.serve, specs[0][0])
    if len(runs) > 1:
        keys = runs[0][0][1].keys()
        mean = [(name, {k: statistics.mean(dict(rows)[name][k] for rows in runs) for k in keys})
                for name, _ in runs[0]]
        print_table(f"{head}; mean of both orders", mean, a.serve, specs[0][0])


if __name__ == "__main__":
    main()
