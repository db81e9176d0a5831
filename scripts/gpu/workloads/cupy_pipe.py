"""CuPy jobs: a signal-processing pipeline (FFTs, filters, matrix products).

modes:
  pipeline     a steady pipeline whose intermediates come and go through the pool: healthy.
  limit-keep   the pool limited to LIMIT_GIB (6) with set_limit; the pipeline keeps every step's
               192 MiB result, so the pool grows to its limit (about 35 s) -> OOM.
Run for RUN_S seconds (default 20)."""
import os
import sys
import time

import cupy as cp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wl  # noqa: E402

mode = sys.argv[1]
run_s = wl.env_f("RUN_S", 20)
c = wl.Cupy()
wl.emit(ev="start", mode=mode, pid=os.getpid(), cupy=cp.__version__)
if mode == "limit-keep":
    c.pool.set_limit(size=int(wl.env_f("LIMIT_GIB", 6) * wl.GiB))

kept = []
try:
    for i in wl.run_for(run_s if mode == "pipeline" else 600):
        sig = cp.random.standard_normal((4096, 4096), dtype=cp.float32)
        spec = cp.fft.rfft2(sig)
        spec[:, 512:] = 0
        filtered = cp.fft.irfft2(spec, s=sig.shape)
        mixed = filtered @ filtered.T
        cp.cuda.Stream.null.synchronize()
        if mode == "limit-keep":
            kept.append(cp.concatenate([mixed, filtered, sig]))  # 192 MiB kept per step
            time.sleep(1.0)
        c.step(i)
except cp.cuda.memory.OutOfMemoryError as e:
    c.oom(e)
wl.emit(ev="end", pid=os.getpid())
