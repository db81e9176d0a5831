#!/usr/bin/env python3
"""What each NVML call of gpumon's tick costs on this machine, on every GPU, in CPU time (this
thread's, ns), called as gpumon calls them: once a round on each GPU in index order, ROUNDS rounds
SPACING seconds apart (cold caches, as at a 1 s tick). The process lists are timed both ways: the
size query nvml-wrapper makes first and the fill after it, and the one call into a buffer sized ahead
that gpumon makes (src/source/nvml/processes.rs). Per-process utilisation likewise (size query, fill).

Prints one table per GPU, then each call summed over the GPUs (a tick's cost on this machine) and
its mean per GPU (what each added GPU costs: multiply by 8 for an 8-GPU machine not lent).

usage: nvml_call_costs.py [ROUNDS] [SPACING]   (plain Python, ctypes; every GPU NVML lists)
"""
import ctypes as C, statistics, sys, time

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
SPACING = float(sys.argv[2]) if len(sys.argv) > 2 else 0.25
nvml = C.CDLL("libnvidia-ml.so.1")


class UtilSample(C.Structure):
    _fields_ = [("pid", C.c_uint), ("ts", C.c_ulonglong), ("sm", C.c_uint), ("mem", C.c_uint),
                ("enc", C.c_uint), ("dec", C.c_uint)]


class ProcInfo(C.Structure):
    _fields_ = [("pid", C.c_uint), ("used", C.c_ulonglong), ("gi", C.c_uint), ("ci", C.c_uint)]


class MemV2(C.Structure):
    _fields_ = [("version", C.c_uint), ("total", C.c_ulonglong), ("reserved", C.c_ulonglong),
                ("free", C.c_ulonglong), ("used", C.c_ulonglong)]


class Util(C.Structure):
    _fields_ = [("gpu", C.c_uint), ("memory", C.c_uint)]


assert nvml.nvmlInit_v2() == 0
count = C.c_uint(0)
assert nvml.nvmlDeviceGetCount_v2(C.byref(count)) == 0
devs = []
for i in range(count.value):
    d = C.c_void_p()
    assert nvml.nvmlDeviceGetHandleByIndex_v2(i, C.byref(d)) == 0
    devs.append(d)
costs = {}  # (gpu, call) -> [ns]
gpu = 0


def timed(name, fn):
    t = time.thread_time_ns()
    rc = fn()
    costs.setdefault((gpu, name), []).append(time.thread_time_ns() - t)
    return rc


buf = (UtilSample * 512)()
procs = (ProcInfo * 64)()
seen = [0] * len(devs)
sized = [0] * len(devs)
for _ in range(ROUNDS):
    c = C.c_uint(0)
    gpu = "all"
    timed("device_count", lambda: nvml.nvmlDeviceGetCount_v2(C.byref(c)))
    for gpu, dev in enumerate(devs):
        h = C.c_void_p()
        timed("device_by_index", lambda: nvml.nvmlDeviceGetHandleByIndex_v2(gpu, C.byref(h)))
        m = MemV2(version=(2 << 24) | C.sizeof(MemV2))
        timed("memory_info_v2", lambda: nvml.nvmlDeviceGetMemoryInfo_v2(dev, C.byref(m)))
        n = C.c_uint(0)
        timed("compute_procs size query", lambda: nvml.nvmlDeviceGetComputeRunningProcesses_v3(dev, C.byref(n), None))
        n2 = C.c_uint(64)
        timed("compute_procs fill (one call, gpumon)", lambda: nvml.nvmlDeviceGetComputeRunningProcesses_v3(dev, C.byref(n2), procs))
        n3 = C.c_uint(64)
        timed("graphics_procs (one call, gpumon)", lambda: nvml.nvmlDeviceGetGraphicsRunningProcesses_v3(dev, C.byref(n3), procs))
        u = Util()
        timed("utilization_rates", lambda: nvml.nvmlDeviceGetUtilizationRates(dev, C.byref(u)))
        t = C.c_uint()
        timed("temperature", lambda: nvml.nvmlDeviceGetTemperature(dev, 0, C.byref(t)))
        p = C.c_uint()
        timed("power_usage", lambda: nvml.nvmlDeviceGetPowerUsage(dev, C.byref(p)))
        cur, pend = C.c_uint(), C.c_uint()
        timed("mig_mode (every 10 s while off)", lambda: nvml.nvmlDeviceGetMigMode(dev, C.byref(cur), C.byref(pend)))
        q = C.c_uint(0)
        timed("process_util size query (every 5 s)", lambda: nvml.nvmlDeviceGetProcessUtilization(dev, None, C.byref(q), C.c_ulonglong(seen[gpu])))
        sized[gpu] = q.value
        q2 = C.c_uint(512)
        rc = timed("process_util fill (every 5 s)", lambda: nvml.nvmlDeviceGetProcessUtilization(dev, buf, C.byref(q2), C.c_ulonglong(seen[gpu])))
        if rc == 0 and q2.value:
            seen[gpu] = max(buf[i].ts for i in range(q2.value))
    time.sleep(SPACING)

print(f"NVML call costs on {len(devs)} GPUs, CPU µs of the calling thread, {ROUNDS} rounds {SPACING} s apart")
names = list(dict.fromkeys(name for _, name in costs))
for g in ["all"] + list(range(len(devs))):
    rows = [(name, costs[(g, name)]) for name in names if (g, name) in costs]
    if not rows:
        continue
    extra = f" (process_util size query said {sized[g]} samples)" if g != "all" else ""
    print(f"\nGPU {g}{extra}")
    print(f"{'call':<42} {'median':>8} {'mean':>8} {'max':>8}")
    for name, v in rows:
        print(f"{name:<42} {statistics.median(v) / 1e3:>8.1f} {statistics.mean(v) / 1e3:>8.1f} {max(v) / 1e3:>8.1f}")
print(f"\nEach call over the {len(devs)} GPUs: the sum of their medians (a round's cost) and the mean median per GPU")
print(f"{'call':<42} {'sum':>8} {'per GPU':>8}")
for name in names:
    meds = [statistics.median(costs[(g, name)]) / 1e3 for g in range(len(devs)) if (g, name) in costs]
    if meds:
        print(f"{name:<42} {sum(meds):>8.1f} {sum(meds) / len(meds):>8.1f}")
