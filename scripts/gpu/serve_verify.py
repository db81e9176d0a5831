"""Compares `gpumon serve`'s /metrics with nvidia-smi at the same moment: per GPU total, used,
free and reserved memory, per process device memory (MiB, nvidia-smi's own rounding allowed ±1).

usage: python3 serve_verify.py URL    (e.g. http://127.0.0.1:9477)
"""
import re, subprocess, sys, urllib.request

url = sys.argv[1]
text = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
smi_gpu = subprocess.check_output(["nvidia-smi", "--query-gpu=uuid,memory.total,memory.used,memory.free,memory.reserved",
                                   "--format=csv,noheader,nounits"]).decode()
smi_apps = subprocess.check_output(["nvidia-smi", "--query-compute-apps=pid,gpu_uuid,used_memory",
                                    "--format=csv,noheader,nounits"]).decode()

def series(name):
    out = []
    for m in re.finditer(r"^" + name + r"\{([^}]*)\} (\S+)", text, re.M):
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(1)))
        out.append((labels, float(m.group(2))))
    return out

MiB = 2**20
ok = bad = 0
def check(what, gpumon_bytes, smi_mib):
    global ok, bad
    g = int(gpumon_bytes) // MiB
    good = abs(g - smi_mib) <= 1
    ok += good; bad += not good
    print(f"{'ok ' if good else 'BAD'} {what}: gpumon {g} MiB, nvidia-smi {smi_mib} MiB")

for line in smi_gpu.strip().splitlines():
    uuid, total, used, free, reserved = [x.strip() for x in line.split(",")]
    for field, smi in [("total", total), ("used", used), ("free", free), ("reserved", reserved)]:
        v = [val for l, val in series(f"gpumon_gpu_memory_{field}_bytes") if l.get("UUID") == uuid]
        if v:
            check(f"{uuid[:12]} {field}", v[0], int(smi))
for line in smi_apps.strip().splitlines():
    pid, uuid, used = [x.strip() for x in line.split(",")]
    v = [val for l, val in series("gpumon_process_device_memory_bytes") if l.get("pid") == pid and l.get("UUID") == uuid]
    if v:
        check(f"pid {pid} device memory", v[0], int(used))
    else:
        bad += 1; print(f"BAD pid {pid}: no gpumon_process_device_memory_bytes series")
pool = series("gpumon_process_pool_allocated_bytes")
print(f"pool series: {len(pool)}; command lines in labels: {'command=' in text}")
print(f"serve: {ok} equal, {bad} differ")
