#!/usr/bin/env python3
"""Compares gpumon's numbers with nvidia-smi and /proc, taken at the same moment.

usage: verify_numbers.py RECORDING.ndjson|SNAPSHOT.json   (reads the recording's last sample or the
snapshot, then asks nvidia-smi
and /proc right away; run it while the GPU processes hold steady memory). Prints one table row per
figure with both values in MiB (kB for /proc) and whether they match.
"""
import json, subprocess, sys
import xml.etree.ElementTree as ET

MiB = 2**20
text = open(sys.argv[1]).read()
try:
    last = json.loads(text)  # a snapshot
    last["processes"] = [p for p in last["processes"] if not p.get("exited_at")]
except json.JSONDecodeError:
    last = json.loads([l for l in text.splitlines() if l.strip()][-1])  # a recording
smi = ET.fromstring(subprocess.check_output(["nvidia-smi", "-q", "-x"]))
apps = subprocess.check_output(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"], text=True)
smi_apps = {int(p): int(m) for p, m in (l.split(",") for l in apps.strip().splitlines() if l.strip())}

rows = []
def row(what, ours, theirs, tol=0):
    ok = ours is not None and theirs is not None and abs(ours - theirs) <= tol
    rows.append((what, ours, theirs, "ok" if ok else "DIFF"))

for g, sg in zip(last["gpus"], smi.findall("gpu")):
    fb = sg.find("fb_memory_usage")
    mib = lambda k: int(fb.find(k).text.split()[0])
    m = g["memory"]
    for k in ("total", "reserved", "used", "free"):
        # nvidia-smi's MiB rounding differs from a floor by up to 1 MiB (gpu-machine-notes.md)
        row(f"GPU{g['index']} {k} MiB", m[k] // MiB if m[k] is not None else None, mib(k), tol=1)
for p in last["processes"]:
    row(f"pid {p['pid']} device MiB", (p["device_memory"] or 0) // MiB, smi_apps.get(p["pid"]))
    try:
        status = dict(l.split(":", 1) for l in open(f"/proc/{p['pid']}/status"))
        kb = lambda k: int(status[k].split()[0])
        row(f"pid {p['pid']} VmSize kB", p["vms"] // 1024, kb("VmSize"))
        row(f"pid {p['pid']} VmRSS kB", p["rss"] // 1024, kb("VmRSS"), tol=8192)
    except FileNotFoundError:
        rows.append((f"pid {p['pid']} /proc", None, None, "exited"))
print(f"{'figure':<28} {'gpumon':>12} {'source':>12}  match")
for r in rows:
    print(f"{r[0]:<28} {str(r[1]):>12} {str(r[2]):>12}  {r[3]}")
