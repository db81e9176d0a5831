#!/usr/bin/env python3
"""What a fleet screen costs: gpumon's screen (120x40, under tmux) over many hosts, on loopback.

  direct:     N hosts (default 100) read directly, each a port of one asyncio server here that answers
              /snapshot and /snapshot?history=0 with a real `gpumon serve --demo` document (history
              rings full, each host its own name);
  prometheus: M hosts (default 1000) read through a real Prometheus that scrapes M ports of the same
              kind of server answering a real gpumon /metrics page (each its own Hostname).

The screen refreshes every --interval (2 s). After --warm seconds its CPU (utime+stime from
/proc/PID/stat) is measured over --seconds; peak RSS is VmHWM, threads /proc/PID/task. Plain Python,
no packages. Needs tmux; for `prometheus`, a prometheus binary (--prometheus, or
GPUMON_TEST_PROMETHEUS as .ci/run sets it, or target/ci-prometheus/usr/bin/prometheus).

usage: bench_fleet_scale.py [--bin target/release/gpumon] [--hosts 100] [--targets 1000]
                            [--seconds 30] [--warm 10] [--interval 2s] [direct] [prometheus]
"""
import argparse, asyncio, json, os, shutil, signal, socket, subprocess, sys, tempfile, threading, time
import urllib.request

TICK = os.sysconf("SC_CLK_TCK")


def free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


def templates(binary):
    """A real gpumon serve --demo's /snapshot, compact /snapshot and /metrics, its history full."""
    port = free_ports(1)[0]
    p = subprocess.Popen([binary, "serve", "--demo", "--speed", "200", "--listen", f"127.0.0.1:{port}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                get(base + "/healthz")
                break
            except OSError:
                time.sleep(0.1)
        time.sleep(5)  # 1000 recorded seconds: every ring holds its 10 minutes
        return get(base + "/snapshot"), get(base + "/snapshot?history=0"), get(base + "/metrics")
    finally:
        p.kill()
        p.wait()


class Servers:
    """One asyncio loop on a thread, listening on many loopback ports; each port answers GETs with
    the body its path picks (keep-alive, Content-Length)."""

    def __init__(self, bodies_by_port):
        self.bodies = bodies_by_port
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        threading.Thread(target=self.run, daemon=True).start()
        self.ready.wait(30)

    def run(self):
        asyncio.set_event_loop(self.loop)

        async def start():
            for port, bodies in self.bodies.items():
                await asyncio.start_server(lambda r, w, b=bodies: self.serve(r, w, b), "127.0.0.1", port,
                                           backlog=64)
            self.ready.set()

        self.loop.run_until_complete(start())
        self.loop.run_forever()

    async def serve(self, reader, writer, bodies):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                target = head.split(b" ", 2)[1].decode()
                body = bodies(target)
                status = b"200 OK" if body is not None else b"404 Not Found"
                body = body or b""
                kind = b"text/plain; version=0.0.4" if target.startswith("/metrics") else b"application/json"
                writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: " + kind + b"\r\n"
                             b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()


def measure(cmd, seconds, warm, label):
    """Runs cmd in a 120x40 tmux pane; CPU% of one core over `seconds` after `warm`, peak RSS, threads."""
    session = f"scale{os.getpid()}"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "40",
                    "-e", "LANG=C.UTF-8", cmd], check=True)
    try:
        pid = int(subprocess.check_output(["tmux", "display", "-p", "-t", session, "#{pane_pid}"]))
        time.sleep(warm)

        def cpu():
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / TICK

        c0, t0 = cpu(), time.monotonic()
        most_threads = 0
        while time.monotonic() - t0 < seconds:
            most_threads = max(most_threads, len(os.listdir(f"/proc/{pid}/task")))
            time.sleep(0.5)
        c1, t1 = cpu(), time.monotonic()
        with open(f"/proc/{pid}/status") as f:
            status = dict(line.split(":", 1) for line in f)
        screen = subprocess.check_output(["tmux", "capture-pane", "-p", "-t", session]).decode()
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], stderr=subprocess.DEVNULL)
    res = {"what": label, "cpu_pct": round(100 * (c1 - c0) / (t1 - t0), 2),
           "peak_rss_mb": round(int(status["VmHWM"].split()[0]) / 1024, 1),
           "rss_mb": round(int(status["VmRSS"].split()[0]) / 1024, 1), "threads_max": most_threads}
    return res, screen


def direct(a, snap, compact):
    ports = free_ports(a.hosts)
    bodies = {}
    for i, port in enumerate(ports):
        name = f"node-{i:03d}".encode()
        full = snap.replace(b'"host":"vm"', b'"host":"' + name + b'"')
        small = compact.replace(b'"host":"vm"', b'"host":"' + name + b'"')
        bodies[port] = lambda t, f=full, s=small: s if t == "/snapshot?history=0" else f if t == "/snapshot" else None
    Servers(bodies)
    tmp = tempfile.mkdtemp()
    hosts = os.path.join(tmp, "hosts.txt")
    with open(hosts, "w") as f:
        f.writelines(f"node-{i:03d}=http://127.0.0.1:{p}\n" for i, p in enumerate(ports))
    cmd = f"{a.bin} --hosts {hosts} --no-local --interval {a.interval}"
    res, screen = measure(cmd, a.seconds, a.warm, f"{a.hosts} hosts direct")
    res["snapshot_bytes"], res["compact_bytes"] = len(snap), len(compact)
    shutil.rmtree(tmp)
    return res, screen


def prometheus_binary(a):
    for p in [a.prometheus, os.environ.get("GPUMON_TEST_PROMETHEUS"), "target/ci-prometheus/usr/bin/prometheus"]:
        if p and os.access(p, os.X_OK):
            return p
    sys.exit("no prometheus binary: give --prometheus, or run .ci/run once to unpack Debian's")


def through_prometheus(a, metrics):
    prom = prometheus_binary(a)
    ports = free_ports(a.targets + 1)
    api, ports = ports[0], ports[1:]
    bodies = {}
    for i, port in enumerate(ports):
        page = metrics.replace(b'Hostname="vm"', b'Hostname="node-%04d"' % i)
        bodies[port] = lambda t, b=page: b if t.startswith("/metrics") else None
    Servers(bodies)
    tmp = tempfile.mkdtemp()
    with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
        targets = ", ".join(f"'127.0.0.1:{p}'" for p in ports)
        f.write(f"global:\n  scrape_interval: {a.scrape}\n  scrape_timeout: {a.scrape}\n"
                f"scrape_configs:\n  - job_name: gpumon\n    static_configs:\n      - targets: [{targets}]\n")
    log = open(os.path.join(tmp, "prometheus.log"), "w")
    p = subprocess.Popen([prom, f"--config.file={tmp}/prometheus.yml", f"--storage.tsdb.path={tmp}/tsdb",
                          f"--web.listen-address=127.0.0.1:{api}"], stdout=log, stderr=log)
    try:
        query = urllib.request.quote('count(count by (Hostname) (gpumon_gpu_memory_used_bytes))')
        seen = 0
        for _ in range(240):  # every target scraped once (at most 2 minutes)
            try:
                doc = json.loads(get(f"http://127.0.0.1:{api}/api/v1/query?query={query}"))
                seen = int(float(doc["data"]["result"][0]["value"][1])) if doc["data"]["result"] else 0
            except (OSError, ValueError, KeyError, IndexError):
                pass
            if seen >= a.targets or p.poll() is not None:
                break
            time.sleep(0.5)
        if seen < a.targets:
            with open(os.path.join(tmp, "prometheus.log")) as f:
                sys.exit(f"Prometheus has {seen} of {a.targets} hosts; its log ends:\n" + "".join(f.readlines()[-5:]))
        cmd = f"{a.bin} --prometheus http://127.0.0.1:{api} --no-local --interval {a.interval}"
        res, screen = measure(cmd, a.seconds, a.warm, f"{a.targets} hosts through Prometheus")
        res["hosts_in_prometheus"] = seen
        res["metrics_bytes_per_target"] = len(metrics)
    finally:
        p.terminate()
        p.wait()
        log.close()
        shutil.rmtree(tmp)
    return res, screen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/gpumon")
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--targets", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--warm", type=float, default=10)
    ap.add_argument("--interval", default="2s")
    ap.add_argument("--scrape", default="10s", help="Prometheus' scrape interval")
    ap.add_argument("--prometheus")
    ap.add_argument("--screens", help="write the last screen of each run into this directory")
    ap.add_argument("what", nargs="*", default=["direct", "prometheus"])
    a = ap.parse_args()
    a.bin = os.path.abspath(a.bin)
    snap, compact, metrics = templates(a.bin)
    results = []
    for what in a.what:
        res, screen = direct(a, snap, compact) if what == "direct" else through_prometheus(a, metrics)
        print(json.dumps(res), flush=True)
        results.append(res)
        if a.screens:
            os.makedirs(a.screens, exist_ok=True)
            with open(os.path.join(a.screens, f"{what}.txt"), "w") as f:
                f.write(screen)
    print(f"\n{os.cpu_count()} CPUs, refresh {a.interval}, {a.seconds:.0f} s after {a.warm:.0f} s, "
          f"{time.strftime('%Y-%m-%d')}")
    print(f"{'':<34} {'CPU % of a core':>16} {'peak RSS MB':>12} {'threads':>8}")
    for r in results:
        print(f"{r['what']:<34} {r['cpu_pct']:>16.2f} {r['peak_rss_mb']:>12.1f} {r['threads_max']:>8}")


if __name__ == "__main__":
    main()
