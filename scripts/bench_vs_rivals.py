#!/usr/bin/env python3
"""Side-by-side cost of GPU monitors on a GPU machine: CPU%, peak RSS and bytes/s written to the terminal.

Each tool runs alone, one after another, in a pseudo-terminal of a fixed size for a fixed time while the
same background load runs. CPU time comes from /proc/PID/stat (utime+stime, children included), peak RSS
from VmHWM in /proc/PID/status, bytes from what the pty delivered. Plain Python, no packages.

usage: bench_vs_rivals.py [--seconds 30] [--cols 120] [--rows 40] [--load 2] NAME=CMD ...
  e.g. gpumon=target/release/gpumon nvtop=nvtop "nvitop=python3 -m nvitop"
"""
import argparse, fcntl, os, pty, select, shlex, signal, struct, subprocess, sys, termios, time

TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime, stime, cutime, cstime are fields 14-17 (1-based); after the ")" split they start at index 11
    return sum(int(x) for x in fields[11:15]) / TICK


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
            cpu0, t0, steady = proc_cpu_s(pid), now, 0
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
    cpu1, t1 = proc_cpu_s(pid), time.monotonic()
    rss = peak_rss_kb(pid)
    os.kill(pid, signal.SIGTERM)
    time.sleep(0.5)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)
    os.close(fd)
    wall = t1 - t0
    return {"cpu_pct": 100 * (cpu1 - cpu0) / wall, "rss_mb": rss / 1024, "bytes_s": steady / wall, "startup_bytes": total - steady}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--cols", type=int, default=120)
    ap.add_argument("--rows", type=int, default=40)
    ap.add_argument("--load", type=int, default=2, help="PyTorch processes running meanwhile")
    ap.add_argument("tools", nargs="+")
    a = ap.parse_args()
    load = []
    here = os.path.dirname(os.path.abspath(__file__))
    for i in range(a.load):
        env = dict(os.environ, GROW_GIB=str(1 + i), HOLD_S="100000")
        load.append(subprocess.Popen([sys.executable, f"{here}/gpu/torch_frag.py", "grow"], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    time.sleep(15)
    rows = []
    try:
        for spec in a.tools:
            name, cmd = spec.split("=", 1)
            res = run_tool(cmd, a.seconds, a.cols, a.rows)
            rows.append((name, res))
            print(f"{name}: {res}", flush=True)
    finally:
        for p in load:
            p.kill()
    print(f"\n{a.seconds:.0f} s at {a.cols}x{a.rows}, {a.load} PyTorch processes, {time.strftime('%Y-%m-%d')}")
    print(f"{'tool':<10} {'CPU %':>7} {'peak RSS MB':>12} {'bytes/s':>9}")
    for name, r in rows:
        print(f"{name:<10} {r['cpu_pct']:>7.2f} {r['rss_mb']:>12.1f} {r['bytes_s']:>9.0f}")
    base = dict(rows)
    if "gpumon" in base:
        g = base["gpumon"]
        for name, r in rows:
            if name != "gpumon":
                print(f"gpumon / {name}: CPU {g['cpu_pct'] / max(r['cpu_pct'], 1e-9):.2f}x, "
                      f"RSS {g['rss_mb'] / max(r['rss_mb'], 1e-9):.2f}x, bytes/s {g['bytes_s'] / max(r['bytes_s'], 1e-9):.2f}x")


if __name__ == "__main__":
    main()
