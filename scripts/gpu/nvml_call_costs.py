#!/usr/bin/env python3
"""What each NVML call of gpumon's tick costs on this machine, in CPU time (this thread's, ns), called
as gpumon calls them: once a round, ROUNDS rounds SPACING seconds apart (cold caches, as at a 1 s
tick). Per-process utilisation is timed as its two halves: the size query nvml-wrapper makes first
(a NULL buffer) and the call that fills a buffer, and as one call into a buffer sized ahead.

usage: nvml_call_costs.py [ROUNDS] [SPACING]   (plain Python, ctypes; GPU 0)
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
dev = C.c_void_p()
assert nvml.nvmlDeviceGetHandleByIndex_v2(0, C.byref(dev)) == 0
costs = {}


def timed(name, fn):
    t = time.thread_time_ns()
    rc = fn()
    costs.setdefault(name, []).append(time.thread_time_ns() - t)
    return rc


buf = (UtilSample * 512)()
procs = (ProcInfo * 64)()
seen = 0
for _ in range(ROUNDS):
    h = C.c_void_p()
    timed("device_by_index", lambda: nvml.nvmlDeviceGetHandleByIndex_v2(0, C.byref(h)))
    c = C.c_uint(0)
    timed("device_count", lambda: nvml.nvmlDeviceGetCount_v2(C.byref(c)))
    m = MemV2(version=(2 << 24) | C.sizeof(MemV2))
    timed("memory_info_v2", lambda: nvml.nvmlDeviceGetMemoryInfo_v2(dev, C.byref(m)))
    n = C.c_uint(0)
    timed("compute_procs size query", lambda: nvml.nvmlDeviceGetComputeRunningProcesses_v3(dev, C.byref(n), None))
    n2 = C.c_uint(64)
    timed("compute_procs fill", lambda: nvml.nvmlDeviceGetComputeRunningProcesses_v3(dev, C.byref(n2), procs))
    u = Util()
    timed("utilization_rates", lambda: nvml.nvmlDeviceGetUtilizationRates(dev, C.byref(u)))
    t = C.c_uint()
    timed("temperature", lambda: nvml.nvmlDeviceGetTemperature(dev, 0, C.byref(t)))
    p = C.c_uint()
    timed("power_usage", lambda: nvml.nvmlDeviceGetPowerUsage(dev, C.byref(p)))
    q = C.c_uint(0)
    timed("process_util size query (NULL buffer)", lambda: nvml.nvmlDeviceGetProcessUtilization(dev, None, C.byref(q), C.c_ulonglong(seen)))
    sized = q.value
    q2 = C.c_uint(512)
    rc = timed("process_util fill (512-sample buffer)", lambda: nvml.nvmlDeviceGetProcessUtilization(dev, buf, C.byref(q2), C.c_ulonglong(seen)))
    if rc == 0 and q2.value:
        seen = max(buf[i].ts for i in range(q2.value))
    time.sleep(SPACING)

print(f"NVML call costs, CPU µs of the calling thread, {ROUNDS} rounds {SPACING} s apart; size query said {sized} samples")
print(f"{'call':<40} {'median':>8} {'mean':>8} {'max':>8}")
for name, v in costs.items():
    print(f"{name:<40} {statistics.median(v) / 1e3:>8.1f} {statistics.mean(v) / 1e3:>8.1f} {max(v) / 1e3:>8.1f}")
