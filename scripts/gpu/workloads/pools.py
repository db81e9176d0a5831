"""Jobs that shape PyTorch's pool on purpose, and jobs that take the GPU from others.

modes:
  churn-capped  a rolling buffer of variable-size samples on the GPU under a CAP_GIB (8) cap: each
                step keeps new 8 MiB samples and drops random old 6 MiB ones, so the pool fills with
                holes too small for the new ones; after about BUILD_S (40) seconds a 1 GiB batch is
                collated -> fragmentation OOM.
  capped-frag   6 MiB samples under a 4 GiB cap, every other one dropped, then a 512 MiB batch:
                fails with the holes adding up to more than it asks (a quick fragmentation OOM).
  hold          take HOLD_GIB (58) and keep it for RUN_S seconds (a notebook holding a model).
  fill          keep GROW_MIB (512) more every second until the GPU is full -> OOM.
  grab          after WAIT_S (10) seconds take all but 1 GiB of what the GPU has free, then hold."""
import os
import random
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wl  # noqa: E402

mode = sys.argv[1]
run_s = wl.env_f("RUN_S", 20)
dev = torch.device("cuda")
t = wl.Torch()
wl.emit(ev="start", mode=mode, pid=os.getpid(), torch=torch.__version__)
MiB = wl.MiB


def take(n_bytes):
    return torch.empty(int(n_bytes), dtype=torch.uint8, device=dev)


try:
    if mode == "churn-capped":
        t.cap(wl.env_f("CAP_GIB", 8))
        rnd = random.Random(3)
        buf = [take(6 * MiB) for _ in range(256)]
        build_s = wl.env_f("BUILD_S", 40)
        # New samples each step; the cap's room minus what the buffer holds, spread over BUILD_S.
        steps = int(build_s / 0.5)
        per_step = max(1, int((t.limit - 256 * 6 * MiB) / (8 * MiB) / steps * 1.05))
        for i in range(steps):
            for _ in range(per_step):
                buf.append(take(8 * MiB))
            for _ in range(per_step // 2):
                k = rnd.randrange(min(len(buf), 256 + i * per_step // 2))
                if buf[k].numel() == 6 * MiB:
                    buf.pop(k)
            t.step(i, kept=len(buf))
            time.sleep(0.5)
        batch = take(1 << 30)
    elif mode == "capped-frag":
        t.cap(4)
        buf = [take(6 * MiB) for _ in range(600)]
        t.step(0)
        time.sleep(wl.env_f("RUN_S", 6) / 2)
        del buf[1::2]
        t.step(1)
        time.sleep(wl.env_f("RUN_S", 6) / 2)
        batch = take(512 * MiB)
    elif mode == "hold":
        x = take(wl.env_f("HOLD_GIB", 58) * wl.GiB)
        for i in wl.run_for(run_s):
            t.step(i)
            time.sleep(1)
    elif mode == "fill":
        grow = int(wl.env_f("GROW_MIB", 512) * MiB)
        kept = []
        for i in wl.run_for(run_s):
            kept.append(take(grow))
            t.step(i)
            time.sleep(1)
    elif mode == "grab":
        time.sleep(wl.env_f("WAIT_S", 10))
        free, _ = torch.cuda.mem_get_info()
        x = take(free - wl.GiB)
        for i in wl.run_for(run_s):
            t.step(i)
            time.sleep(1)
    else:
        sys.exit(f"unknown mode {mode}")
except torch.OutOfMemoryError as e:
    t.oom(e)
wl.emit(ev="end", pid=os.getpid())
