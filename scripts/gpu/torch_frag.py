"""PyTorch allocation failures on demand, for gpumon fixtures.

modes:
  fraction  cap the process at 4 GiB (set_per_process_memory_fraction), fill it with 6 MiB tensors
            (three per 20 MiB caching-allocator segment), free every other one, then ask for 512 MiB:
            the cache holds ~2 GiB of free holes but no block that size -> fragmentation OOM.
  holes     cap the process at 7 GiB, fill it with 8 MiB tensors (two per 20 MiB segment) until
            6.5 GiB is reserved, free every other one, then ask for 1 GiB: about 3 GiB free in
            8-12 MiB holes, and no whole segment to release -> fragmentation OOM (torch 2.11
            serves `fraction`'s 512 MiB after all).
  fill      the same without a cap, on a GPU another process already filled: fill what is left.
  full      ask for more than the device has free with an empty cache -> device-full OOM.
  grow      allocate 256 MiB every 2 s up to GROW_GIB (default 8), then hold (demo workload).
  busy      matrix products back to back for BUSY_S seconds (default 60): a GPU at work for
            per-process utilisation checks.
With DIE=1 an OOM is re-raised after its report, so the job dies of it (exit status 1).
"""
import json, os, sys, time
import torch

MiB = 2**20
mode = sys.argv[1]
hold = float(os.environ.get("HOLD_S", "0"))
dev = torch.device("cuda")
total = torch.cuda.get_device_properties(0).total_memory
print(f"torch {torch.__version__} pid {os.getpid()} mode {mode}", flush=True)


def report(e):
    print(f"torch.OutOfMemoryError: {e}", file=sys.stderr, flush=True)
    s = torch.cuda.memory_stats()
    print(json.dumps({k: s.get(k) for k in ["allocated_bytes.all.current", "reserved_bytes.all.current",
                                          "inactive_split_bytes.all.current", "num_alloc_retries", "num_ooms"]}), flush=True)
    if os.environ.get("DIE"):
        raise e


keep = []
if mode in ("fraction", "fill"):
    if mode == "fraction":
        torch.cuda.set_per_process_memory_fraction(4 * 2**30 / total)
        n = 537
    for i in range(100000):
        if mode == "fraction" and i >= n:
            break
        if mode == "fill" and i % 32 == 0 and torch.cuda.mem_get_info()[0] < 400 * MiB:
            break
        keep.append(torch.empty(6 * MiB, dtype=torch.uint8, device=dev))
    del keep[1::2]
    time.sleep(float(os.environ.get("FRAG_WAIT_S", "3")))
    try:
        big = torch.empty(512 * MiB, dtype=torch.uint8, device=dev)
    except torch.OutOfMemoryError as e:
        report(e)
elif mode == "holes":
    torch.cuda.set_per_process_memory_fraction(7 * 2**30 / total)
    while torch.cuda.memory_reserved() < 6.5 * 2**30:
        keep.append(torch.empty(8 * MiB, dtype=torch.uint8, device=dev))
    del keep[1::2]
    time.sleep(float(os.environ.get("FRAG_WAIT_S", "3")))
    try:
        big = torch.empty(2**30, dtype=torch.uint8, device=dev)
    except torch.OutOfMemoryError as e:
        report(e)
elif mode == "full":
    free = torch.cuda.mem_get_info()[0]
    keep.append(torch.empty(free // 2, dtype=torch.uint8, device=dev))
    time.sleep(2)
    try:
        keep.append(torch.empty(free, dtype=torch.uint8, device=dev))
    except torch.OutOfMemoryError as e:
        report(e)
elif mode == "grow":
    top = float(os.environ.get("GROW_GIB", "8"))
    while len(keep) * 256 < top * 1024:
        keep.append(torch.ones(256 * MiB // 4, dtype=torch.float32, device=dev))
        time.sleep(2)
elif mode == "busy":
    a = torch.randn(8192, 8192, device=dev)
    end = time.monotonic() + float(os.environ.get("BUSY_S", "60"))
    while time.monotonic() < end:
        for _ in range(20):
            b = a @ a
        torch.cuda.synchronize()
time.sleep(hold)
