"""What the allocator probe's start-up hook costs a Python process at start, hook against hook;
with --tick, what one tick of the probe costs, with and without its parts that watch how the
process ends and where its main thread stands.

Usage: python3 scripts/bench_probe_startup.py [--runs N] [--hook NAME=DIR ...] [--code CODE]
       python3 scripts/bench_probe_startup.py --tick [--runs N]
  --hook  a hook directory to time (its sitecustomize.py and whatever sits beside it), repeatable;
          default: this checkout's python/gpumon/probe as "now". An older hook for comparison:
            mkdir -p /tmp/probe-before
            git show 66975af:python/gpumon/probe/sitecustomize.py > /tmp/probe-before/sitecustomize.py
            python3 scripts/bench_probe_startup.py --hook before=/tmp/probe-before --hook now=python/gpumon/probe
  --runs  processes per variant and cache state (default 40), interleaved
  --code  what each process runs (default "pass")

Each hook directory is copied into a temporary directory first (the checkout gets no __pycache__).
For every hook it times, interleaved with a process without any hook:
  off     the hook on PYTHONPATH, GPUMON_PROBE_DIR unset (chaining only: the probe does not start)
  on      the probe started (GPUMON_PROBE_DIR set, interval 1 s): its thread's first tick and
          its stop at exit included
each with bytecode cached (__pycache__ written by a first run, as in a lasting hook directory) and
not (PYTHONDONTWRITEBYTECODE=1, no cache: every process compiles what it loads). It prints the
median and 90th percentile of the whole process's wall time, the median of what `python -X
importtime` says the import of `sitecustomize` took (the hook with everything it loads, its
chaining included), and the median CPU time the process spent (user + system, from
os.wait4). Standard library only, no GPU.

--tick loads this checkout's probe package in-process (never started: its ticks are called from
a thread of this script, as its own thread would run them, with no framework loaded) and times,
in that thread's CPU time, median of N batches (default 7) of 2000, the variants' batches
interleaved: a whole tick (figures read, ``<pid>.json`` written to a temporary directory) with
the main thread's watch on and off (off: ``where`` not looked at) and with the end hooks
installed (the chained ``sys.excepthook``) and not, first while the main thread waits in one
place (``where`` written every tick: its frames read and encoded), then while it runs (its key
only compared, the usual case); the watch alone in both; and the last write at exit
(``write_last``), once per process."""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def parse_args(argv):
    hooks, runs, code = [], 40, "pass"
    while argv:
        flag = argv.pop(0)
        if flag == "--tick":
            runs = int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 7
            tick_bench(runs)
            sys.exit(0)
        if flag == "--hook":
            name, _, path = argv.pop(0).partition("=")
            hooks.append((name, os.path.abspath(path)))
        elif flag == "--runs":
            runs = int(argv.pop(0))
        elif flag == "--code":
            code = argv.pop(0)
        else:
            sys.exit(__doc__)
    return hooks or [("now", os.path.join(REPO, "python", "gpumon", "probe"))], runs, code


def copy_hook(src, dst):
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dst


def base_env():
    return {k: v for k, v in os.environ.items() if not k.startswith(("GPUMON_", "PYTHON"))}


def variant_env(hook_dir, probe_dir, on, cached):
    env = base_env()
    if hook_dir is not None:
        env.update(PYTHONPATH=hook_dir, GPUMON_PROBE_HOOK_DIR=hook_dir)
        if on:
            env.update(GPUMON_PROBE_DIR=probe_dir, GPUMON_PROBE_INTERVAL_MS="1000")
    if not cached:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def timed(argv, env):
    """(wall seconds, user + system CPU seconds, stderr) of one process."""
    began = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit("%s failed (%d): %s" % (" ".join(argv), proc.returncode, err.decode()[-2000:]))
    return time.perf_counter() - began, usage.ru_utime + usage.ru_stime, err


def sitecustomize_us(stderr):
    """The cumulative µs `-X importtime` gives the import of sitecustomize, or None."""
    for line in stderr.decode(errors="replace").splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == "sitecustomize":
            return int(parts[1])
    return None


def _thread_us(fn, count, runs):
    """Median over ``runs`` batches of ``count`` calls of ``fn``: µs of this thread's CPU time
    a call."""
    batches = []
    for _ in range(runs):
        began = time.thread_time_ns()
        for _ in range(count):
            fn()
        batches.append((time.thread_time_ns() - began) / count / 1000)
    return statistics.median(batches)


def tick_bench(runs):
    import threading
    sys.path.insert(0, os.path.join(REPO, "tests", "python"))
    from probe_harness import load_probe
    load_probe()
    probe_mod = sys.modules["_gpumon_probe.probe"]
    ending = sys.modules["_gpumon_probe.ending"]
    main_thread = sys.modules["_gpumon_probe.main_thread"]
    tmp = tempfile.mkdtemp(prefix="gpumon-probe-tick-")
    rows, count = [], 2000
    still, moving = threading.Event(), [True]
    try:
        probe = probe_mod.Probe(os.path.join(tmp, "probe"), 1000, False)
        probe.start_time = probe_mod.start_time()
        real_where = probe.where

        def interleaved(variants, plain_hook):
            """Each variant's median, their batches interleaved (the machine's drift shared)."""
            batches = {label: [] for label, _, _ in variants}
            for _ in range(runs):
                for label, watched, hooked in variants:
                    probe.where = real_where if watched else (lambda at_ms: None)
                    sys.excepthook = ending._hook if hooked else plain_hook
                    batches[label].append(_thread_us(probe.tick, count, 1))
            probe.where = real_where
            rows.extend((label, statistics.median(batches[label])) for label, _, _ in variants)

        def measure():
            now = lambda: time.time_ns() // 1000000  # noqa: E731
            plain_hook = sys.excepthook
            ending.install()
            for _ in range(200):
                probe.tick()  # warm: the parts imported, the file and directory cached
            # the main thread waits in one place: its frames are read and written every tick
            interleaved([("tick, main thread waiting: where written", True, False),
                         ("tick, where not watched", False, False),
                         ("tick, not watched, end hooks installed", False, True),
                         ("tick, where written, end hooks installed", True, True)], plain_hook)
            rows.append(("where alone, main thread waiting (written)",
                         _thread_us(lambda: main_thread.where(probe, now()), count, runs)))
            moving[0] = False
            still.set()
            time.sleep(0.05)
            probe.watch = None
            # the main thread runs: the watch only compares its key
            interleaved([("tick, main thread running: where compared", True, True),
                         ("tick, where not watched", False, True)], plain_hook)
            rows.append(("where alone, main thread running (compared)",
                         _thread_us(lambda: main_thread.where(probe, now()), count, runs)))
            probe.end = ending.exception_end(RuntimeError, RuntimeError("bench"))
            rows.append(("write_last (once, at exit)", _thread_us(probe.write_last, 200, runs)))
            moving[0] = None

        os.environ["GPUMON_PROBE_STILL_S"] = "1"
        worker = threading.Thread(target=measure)
        probe.watch = main_thread.Watch()
        probe.watch.since_ms = 0  # waiting since long ago: reported from the first tick
        worker.start()
        still.wait()
        x = 0
        while moving[0] is False:
            x += 1  # the main thread runs while the watch only compares
        worker.join()
    finally:
        sys.excepthook = sys.__excepthook__
        shutil.rmtree(tmp, True)
    print("Python %s, median of %d batches of %d, thread CPU time; %d CPUs, load %.1f"
          % (sys.version.split()[0], runs, count, os.cpu_count(), os.getloadavg()[0]))
    for label, us in rows:
        print("%-46s %8.1f µs" % (label, us))


def main():
    hooks, runs, code = parse_args(sys.argv[1:])
    tmp = tempfile.mkdtemp(prefix="gpumon-probe-startup-")
    try:
        probe_dir = os.path.join(tmp, "probe")
        rows = []
        for cached in (True, False):
            envs = [("no hook", variant_env(None, probe_dir, False, cached))]
            for name, path in hooks:
                hook = copy_hook(path, os.path.join(tmp, "%s-%s" % (name, cached), "hook"))
                for on in (False, True):
                    label = "%s %s" % (name, "on" if on else "off")
                    envs.append((label, variant_env(hook, probe_dir, on, cached)))
            for _, env in envs:  # a first run writes the bytecode cache (when allowed)
                timed([sys.executable, "-c", code], env)
            results = {label: ([], [], []) for label, _ in envs}
            for _ in range(runs):
                for label, env in envs:
                    wall, cpu, _ = timed([sys.executable, "-c", code], env)
                    _, _, err = timed([sys.executable, "-X", "importtime", "-c", code], env)
                    results[label][0].append(wall)
                    results[label][1].append(cpu)
                    us = sitecustomize_us(err)
                    if us is not None:
                        results[label][2].append(us)
            rows.append((cached, results))
        print("Python %s, %d runs a row, `%s`; %d CPUs, load %.1f"
              % (sys.version.split()[0], runs, code, os.cpu_count(), os.getloadavg()[0]))
        print("%-22s %-8s %10s %10s %14s %10s" % ("variant", "bytecode", "wall ms", "p90 ms",
                                                  "sitecust. ms", "CPU ms"))
        for cached, results in rows:
            for label, (wall, cpu, imp) in results.items():
                wall.sort()
                print("%-22s %-8s %10.2f %10.2f %14s %10.2f" % (
                    label, "cached" if cached else "none", statistics.median(wall) * 1e3,
                    wall[round(0.9 * (len(wall) - 1))] * 1e3,
                    "%.2f" % (statistics.median(imp) / 1e3) if imp else "-",
                    statistics.median(cpu) * 1e3))
    finally:
        shutil.rmtree(tmp, True)


if __name__ == "__main__":
    main()
