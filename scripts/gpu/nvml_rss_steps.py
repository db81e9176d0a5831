"""Which NVML call maps what: resident memory (anon/file) and whether libcuda is mapped after each
NVML call gpumon makes, in the order it makes them. Plain ctypes, no packages."""
import ctypes, sys

def mem():
    d = {}
    for line in open("/proc/self/status"):
        k, _, v = line.partition(":")
        if k in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            d[k] = int(v.split()[0])
    cuda = any("libcuda.so" in l for l in open("/proc/self/maps"))
    return d, cuda

last = mem()[0]
def step(name, fn):
    global last
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001
        r = f"error {e}"
    d, cuda = mem()
    print(f"{name:44s} rc={r!s:6} RSS {d['VmRSS']:6d} kB (+{d['VmRSS']-last['VmRSS']:5d})  anon {d['RssAnon']:6d} file {d['RssFile']:6d}  libcuda {'MAPPED' if cuda else '-'}", flush=True)
    last = d

step("start", lambda: 0)
nv = ctypes.CDLL("libnvidia-ml.so.1")
step("dlopen libnvidia-ml", lambda: 0)
order = sys.argv[1:] or ["init", "count", "handle", "uuid", "name", "mem", "util", "temp", "power", "pci",
                         "procs", "gprocs", "putil", "mig", "nvmlver", "drv", "cuda"]
h = ctypes.c_void_p()
buf = ctypes.create_string_buffer(256)
u = ctypes.c_uint()
class Mem2(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("total", ctypes.c_ulonglong), ("reserved", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]
class Info(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("used", ctypes.c_ulonglong), ("gi", ctypes.c_uint), ("ci", ctypes.c_uint)]
class PSample(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("ts", ctypes.c_ulonglong), ("sm", ctypes.c_uint), ("mem", ctypes.c_uint), ("enc", ctypes.c_uint), ("dec", ctypes.c_uint)]
calls = {
    "init": lambda: nv.nvmlInit_v2(),
    "init-noattach": lambda: nv.nvmlInitWithFlags(2),
    "count": lambda: nv.nvmlDeviceGetCount_v2(ctypes.byref(u)),
    "handle": lambda: nv.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h)),
    "uuid": lambda: nv.nvmlDeviceGetUUID(h, buf, 96),
    "name": lambda: nv.nvmlDeviceGetName(h, buf, 96),
    "mem": lambda: (lambda m: (setattr(m, "version", (2 << 24) | ctypes.sizeof(Mem2)), nv.nvmlDeviceGetMemoryInfo_v2(h, ctypes.byref(m)))[1])(Mem2()),
    "util": lambda: nv.nvmlDeviceGetUtilizationRates(h, ctypes.byref((ctypes.c_uint * 2)())),
    "temp": lambda: nv.nvmlDeviceGetTemperature(h, 0, ctypes.byref(u)),
    "power": lambda: nv.nvmlDeviceGetPowerUsage(h, ctypes.byref(u)),
    "pci": lambda: nv.nvmlDeviceGetPciInfo_v3(h, ctypes.create_string_buffer(128)),
    "procs": lambda: (lambda n: nv.nvmlDeviceGetComputeRunningProcesses_v3(h, ctypes.byref(n), (Info * 64)()))(ctypes.c_uint(64)),
    "gprocs": lambda: (lambda n: nv.nvmlDeviceGetGraphicsRunningProcesses_v3(h, ctypes.byref(n), (Info * 64)()))(ctypes.c_uint(64)),
    "putil": lambda: (lambda n: nv.nvmlDeviceGetProcessUtilization(h, (PSample * 64)(), ctypes.byref(n), ctypes.c_ulonglong(0)))(ctypes.c_uint(64)),
    "mig": lambda: nv.nvmlDeviceGetMigMode(h, ctypes.byref(u), ctypes.byref(ctypes.c_uint())),
    "nvmlver": lambda: nv.nvmlSystemGetNVMLVersion(buf, 80),
    "drv": lambda: nv.nvmlSystemGetDriverVersion(buf, 80),
    "cuda": lambda: nv.nvmlSystemGetCudaDriverVersion(ctypes.byref(u)),
    "cuda2": lambda: nv.nvmlSystemGetCudaDriverVersion_v2(ctypes.byref(u)),
}
for name in order:
    step(name, calls[name])
print("cuda version", u.value)
