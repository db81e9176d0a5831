"""Holds all but LEAVE_GIB of the GPU's free memory (CuPy, no pool) for HOLD_S seconds."""
import os, time
import cupy as cp

leave = float(os.environ.get("LEAVE_GIB", "3")) * 2**30
cp.cuda.set_allocator(None)
free, total = cp.cuda.runtime.memGetInfo()
buf = cp.cuda.memory.alloc(int(free - leave))
print(f"hog pid {os.getpid()} holds {int(free - leave)} bytes", flush=True)
time.sleep(float(os.environ.get("HOLD_S", "30")))
