#!/usr/bin/env python3
"""gpumon's memory while it shows the largest block map (issue 26: at most 8 MB more).

Replays the demo recording twice on the screen, in tmux, with its fragmenting PyTorch job (the
process of its `torch_frag.py fill` command) selected and its block map open (`m`): once without
any map (the maps the demo holds taken out), once with the largest map a probe writes (2048 runs
over 1024 segments, 20 sites with 256-character file names, sent anew every 5 samples so the
model keeps replacing it), and reports each run's peak RSS (VmHWM) and their difference as JSON.

    scripts/map_rss.py [GPUMON] [OUT_DIR]      (default: target/debug/gpumon, no file)

Needs tmux and Python 3; no GPU. Takes about 35 s.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

MIB = 1 << 20
DEMO = "assets/demo.ndjson"


def demo_job():
    """The fragmenting job's pid, its GPU's UUID and the demo's sample count."""
    lines = open(DEMO).read().splitlines()
    for line in lines[1:]:
        for p in json.loads(line)["processes"]:
            if "torch_frag.py fill" in (p.get("command") or ""):
                return p["pid"], p["gpu_uuid"], len(lines) - 1
    sys.exit("map_rss.py: no torch_frag.py fill process in " + DEMO)


PID, GPU, SAMPLES = demo_job()


def largest_map(start, at_ms, k):
    segments = []
    for i in range(1024):
        segments.append({
            "address": 0x7F0000000000 + i * 20 * MIB, "size": 20 * MIB, "kind": "large",
            "expandable": False, "private": i % 100 == 7, "stream": 0,
            "runs": [["a", 3, 18 * MIB, 8 * MIB], ["f", 1, 2 * MIB, 2 * MIB]],
        })
    sites = [{"file": "/home/user/" + ("p%02d/" % j) * 60 + "train.py", "line": 80 + j,
              "function": "step_%d_" % j + "x" * 100, "blocks": 100 + j + k, "bytes": (200 - j) * MIB}
             for j in range(20)]
    device = {
        "index": 0, "uuid": GPU, "allocated": 1024 * 18 * MIB, "reserved": 1024 * 20 * MIB,
        "free": 1024 * 2 * MIB, "largest_free": 2 * MIB,
        "holes": [[MIB, 0, 0], [8 * MIB, 1024, 2048 * MIB], [64 * MIB, 0, 0], [512 * MIB, 0, 0], [None, 0, 0]],
        "segments": segments, "segments_reason": None, "segments_total": 1024, "elided": None,
        "sites": sites, "sites_reason": None, "stranding_sites": sites[:5],
        "unattributed": {"blocks": 3, "bytes": 3 * MIB}, "shapes": None, "free_blocks": None,
    }
    return {"pid": PID, "start_time": start, "at_ms": at_ms, "reason": "request", "request_id": None,
            "took_us": 1500, "oom": None,
            "frameworks": [{"name": "pytorch", "version": "2.11.0", "error": None, "devices": [device]}]}


def recording(path, with_maps):
    lines = open(DEMO).read().splitlines()
    out = [lines[0]]
    for i, line in enumerate(lines[1:]):
        sample = json.loads(line)
        sample.pop("probes", None)  # the demo's own maps: neither run keeps them
        mine = [p for p in sample["processes"] if p["pid"] == PID]
        if with_maps and mine and i % 5 == 0:
            start = mine[0]["start_time"]
            sample["probes"] = [{"pid": PID, "start_time": start,
                                 "map": largest_map(start, sample["at_ms"], i)}]
        out.append(json.dumps(sample))
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def peak_rss_kib(gpumon, path, session):
    cmd = f"{gpumon} --replay {path} --speed 10 --filter {PID} --no-mouse"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "200", "-y", "50", cmd], check=True)
    try:
        time.sleep(1.5)
        subprocess.run(["tmux", "send-keys", "-t", session, "m"], check=True)
        pane_pid = subprocess.run(["tmux", "list-panes", "-t", session, "-F", "#{pane_pid}"],
                                  capture_output=True, text=True, check=True).stdout.split()[0]
        deadline = time.time() + SAMPLES / 10 + 3  # the samples at 10x, and a little
        peak = 0
        screen = ""
        while time.time() < deadline:
            try:
                status = open(f"/proc/{pane_pid}/status").read()
            except FileNotFoundError:
                break
            for l in status.splitlines():
                if l.startswith("VmHWM:"):
                    peak = max(peak, int(l.split()[1]))
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", session],
                                    capture_output=True, text=True).stdout
            time.sleep(0.5)
        return peak, screen
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)


def main():
    gpumon = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/debug/gpumon")
    out_dir = sys.argv[2] if len(sys.argv) > 2 else None
    if not shutil.which("tmux"):
        sys.exit("map_rss.py needs tmux")
    tmp = tempfile.mkdtemp(prefix="gpumon-map-rss-")
    plain, maps = os.path.join(tmp, "plain.ndjson"), os.path.join(tmp, "maps.ndjson")
    recording(plain, False)
    recording(maps, True)
    base, _ = peak_rss_kib(gpumon, plain, "maprss-plain-%d" % os.getpid())
    with_map, screen = peak_rss_kib(gpumon, maps, "maprss-maps-%d" % os.getpid())
    result = {
        "gpumon": gpumon,
        "peak_rss_kib_without_maps": base,
        "peak_rss_kib_with_largest_map": with_map,
        "growth_kib": with_map - base,
        "bound_kib": 8 * 1024,
        "within_bound": with_map - base <= 8 * 1024,
        "map_shown": "block map: pid %d" % PID in screen,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, "map_rss.json"), "w") as f:
            f.write(text + "\n")
    shutil.rmtree(tmp)
    sys.exit(0 if result["within_bound"] and result["map_shown"] else 1)


if __name__ == "__main__":
    main()
