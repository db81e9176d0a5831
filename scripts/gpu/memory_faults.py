"""Real CUDA memory faults and NVML memory-health readings for test fixtures (issue 28).

Usage: python3 memory_faults.py OUTDIR
Writes OUTDIR/nvml-health.json (ECC mode, error counters, remapped rows, retired pages per GPU
through pynvml, each failure as its NVML error), OUTDIR/events.json (event registration and every
event seen while the faults ran), and OUTDIR/fault-NAME.log (each faulting program's own output):
illegal address and misaligned address from a CuPy kernel, the same illegal address seen by torch
and by JAX in the process, and a device-side assert from torch indexing. Nothing changes a GPU
setting."""
import json
import os
import subprocess
import sys
import threading
import time

import pynvml as N

out = sys.argv[1]
os.makedirs(out, exist_ok=True)

KERNEL = r'''
extern "C" __global__ void poke(float* p, long long off) { p[off] = 1.0f; }
extern "C" __global__ void odd(char* p) { *(double*)(p + 1) = 1.0; }
'''
FAULTS = {
    "cupy-illegal": "import cupy as cp\nm=cp.RawModule(code=K)\nx=cp.zeros(16,dtype=cp.float32)\n"
                    "m.get_function('poke')((1,),(1,),(x,cp.int64(1<<38)))\ncp.cuda.runtime.deviceSynchronize()\n",
    "cupy-misaligned": "import cupy as cp\nm=cp.RawModule(code=K)\nx=cp.zeros(16,dtype=cp.float64)\n"
                       "m.get_function('odd')((1,),(1,),(x,))\ncp.cuda.runtime.deviceSynchronize()\n",
    "torch-illegal": "import torch, cupy as cp\nx=torch.zeros(16,device='cuda')\nm=cp.RawModule(code=K)\n"
                     "m.get_function('poke')((1,),(1,),(x.data_ptr(),cp.int64(1<<38)))\n"
                     "y=x*2\ntorch.cuda.synchronize()\nprint(y)\n",
    "torch-assert": "import torch\nx=torch.zeros(10,device='cuda')\ni=torch.tensor([100],device='cuda')\n"
                    "print(x[i])\ntorch.cuda.synchronize()\n",
    "jax-illegal": "import jax, jax.numpy as jnp, cupy as cp\na=jnp.ones(16)\na.block_until_ready()\n"
                   "m=cp.RawModule(code=K)\nx=cp.zeros(16,dtype=cp.float32)\n"
                   "m.get_function('poke')((1,),(1,),(x,cp.int64(1<<38)))\nb=(a*2).block_until_ready()\nprint(b)\n",
}


def call(f, *a):
    try:
        v = f(*a)
        return v.decode() if isinstance(v, bytes) else v
    except N.NVMLError as e:
        return {"nvml_error": str(e)}


N.nvmlInit()
gpus = []
for i in range(N.nvmlDeviceGetCount()):
    h = N.nvmlDeviceGetHandleByIndex(i)
    g = {"index": i, "uuid": call(N.nvmlDeviceGetUUID, h), "ecc_mode": call(N.nvmlDeviceGetEccMode, h)}
    for et, en in ((N.NVML_MEMORY_ERROR_TYPE_CORRECTED, "corrected"),
                   (N.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, "uncorrected")):
        for ct, cn in ((N.NVML_VOLATILE_ECC, "volatile"), (N.NVML_AGGREGATE_ECC, "aggregate")):
            g[f"ecc_{en}_{cn}"] = call(N.nvmlDeviceGetTotalEccErrors, h, et, ct)
    g["remapped_rows"] = call(N.nvmlDeviceGetRemappedRows, h)
    g["retired_single"] = call(N.nvmlDeviceGetRetiredPages, h, N.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
    g["retired_double"] = call(N.nvmlDeviceGetRetiredPages, h, N.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERRORS)
    g["retired_pending"] = call(N.nvmlDeviceGetRetiredPagesPendingStatus, h)
    g["supported_events"] = call(N.nvmlDeviceGetSupportedEventTypes, h)
    gpus.append(g)
json.dump(gpus, open(os.path.join(out, "nvml-health.json"), "w"), indent=1, default=str)

events, reg = [], {}
try:
    es = N.nvmlEventSetCreate()
except N.NVMLError as e:
    es, reg["create"] = None, str(e)
for i in range(N.nvmlDeviceGetCount() if es is not None else 0):
    h = N.nvmlDeviceGetHandleByIndex(i)
    try:
        N.nvmlDeviceRegisterEvents(h, N.nvmlEventTypeXidCriticalError | N.nvmlEventTypeDoubleBitEccError
                                   | N.nvmlEventTypeSingleBitEccError, es)
        reg[i] = "ok"
    except N.NVMLError as e:
        reg[i] = str(e)
stop = threading.Event()


def wait():
    while not stop.is_set():
        try:
            d = N.nvmlEventSetWait_v2(es, 500)
            events.append({"t": time.time(), "type": d.eventType, "data": d.eventData,
                           "gi": getattr(d, "gpuInstanceId", None), "ci": getattr(d, "computeInstanceId", None)})
        except N.NVMLError as e:
            if "Timeout" not in str(e):
                events.append({"t": time.time(), "error": str(e)})
                time.sleep(0.5)


th = threading.Thread(target=wait, daemon=True)
if es is not None:
    th.start()
runs = {}
for name, code in FAULTS.items():
    t0 = time.time()
    p = subprocess.run([sys.executable, "-c", "K=%r\n" % KERNEL + code], capture_output=True, text=True,
                       timeout=90)
    with open(os.path.join(out, f"fault-{name}.log"), "w") as f:
        f.write(p.stdout + p.stderr)
    runs[name] = {"t0": t0, "t1": time.time(), "status": p.returncode}
    time.sleep(2)
time.sleep(3)
stop.set()
if es is not None:
    th.join(2)
json.dump({"registered": reg, "events": events, "runs": runs}, open(os.path.join(out, "events.json"), "w"),
          indent=1, default=str)
