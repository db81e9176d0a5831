"""Watches a `gpumon serve` while jobs run: every PERIOD seconds it takes /snapshot?history=0 and
nvidia-smi's process list at the same moment, and writes one JSON line of both (OUT.jsonl). On
SIGTERM/SIGINT it prints a summary: each alert with the time it was first seen, each job as its
ranks were last seen, and every poll where a process's device memory (gpumon) and nvidia-smi's
used memory for the same pid and GPU differ by more than one MiB (a growing process can differ by
what it allocated between gpumon's sample and nvidia-smi's read; the poll says how much it grew).
Usage: python3 serve_watch.py URL OUT.jsonl [PERIOD]"""
import json
import signal
import subprocess
import sys
import time
import urllib.request

url, out = sys.argv[1], sys.argv[2]
period = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0
seen, jobs, diffs, polls = {}, {}, [], 0
stop = False


def on_signal(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_signal)
signal.signal(signal.SIGINT, on_signal)
with open(out, "w") as f:
    while not stop:
        t = time.time()
        try:
            snap = json.load(urllib.request.urlopen(url + "/snapshot?history=0", timeout=5))
        except Exception as e:  # serve not up yet, or gone
            time.sleep(period)
            continue
        smi = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,gpu_uuid,used_memory",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True).stdout
        rows = {}
        for line in smi.strip().splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 3 and parts[2].isdigit():
                rows[(int(parts[0]), parts[1])] = int(parts[2])
        polls += 1
        for p in snap.get("processes", []):
            if p.get("exited_at") or p.get("device_memory") is None:
                continue
            key = (p["pid"], p["gpu_uuid"])
            if key in rows:
                mib = p["device_memory"] >> 20
                if abs(mib - rows[key]) > 1:
                    diffs.append({"t": round(t, 1), "pid": p["pid"], "gpu": p["gpu_uuid"][-8:],
                                  "gpumon_mib": mib, "nvidia_smi_mib": rows[key],
                                  "growth_per_s": p.get("growth_bytes_per_s")})
        for a in snap.get("alerts", []):
            k = (a.get("at"), a.get("class"), a.get("pid"), a.get("title"))
            if k not in seen:
                seen[k] = round(t, 1)
        for j in snap.get("jobs", []):
            jobs[j.get("id")] = j
        f.write(json.dumps({"t": round(t, 3), "snapshot": {k: snap.get(k) for k in
                            ("processes", "alerts", "jobs", "gpus")}, "nvidia_smi": smi}) + "\n")
        f.flush()
        time.sleep(max(0.0, period - (time.time() - t)))
print(f"{polls} polls")
for (at, cls, pid, title), first in sorted(seen.items(), key=lambda kv: kv[1]):
    print(f"alert first seen {time.strftime('%H:%M:%S', time.gmtime(first))} (raised {at}): "
          f"{cls} pid {pid}: {title}")
for jid, j in jobs.items():
    print("job", json.dumps(j)[:1500])
print(f"{len(diffs)} process readings differing from nvidia-smi by more than 1 MiB")
for d in diffs[:20]:
    print("  ", json.dumps(d))
