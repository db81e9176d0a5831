"""CuPy pool-limit OOM (run with CUPY_GPU_MEMORY_LIMIT), or `hold`: a 2.5 GiB pool for HOLD_S s (demo)."""
import os, sys, time
import cupy as cp

mode = sys.argv[1]
print(f"cupy {cp.__version__} pid {os.getpid()} mode {mode}", flush=True)
try:
    if mode == "limit":
        a = cp.ones((512 * 2**20,), cp.uint8)
        b = cp.ones((768 * 2**20,), cp.uint8)
    elif mode == "hold":
        arrs = [cp.ones((256 * 2**20,), cp.uint8) for _ in range(10)]
        del arrs[::2]
        time.sleep(float(os.environ.get("HOLD_S", "60")))
except Exception as e:
    print(f"{type(e).__module__}.{type(e).__name__}: {e}", file=sys.stderr, flush=True)
