"""PyTorch's figures: one ``memory_stats()`` per device once the process has initialised CUDA
(never before: ``torch.cuda.is_initialized()`` first), its UUID and per-process cap, and the
largest free block from a rare, timed ``memory_snapshot()`` (docs/probe-format.md,
"largest_free_block for PyTorch")."""

import os
import time

from .common import device, loaded, num, torch_uuid
from .torch_history import history_on

_STRANDED_FOR_SNAPSHOT = 256 << 20


def read(probe, torch):
    """The device entries of the devices this process's allocator uses; [] before CUDA."""
    cuda = loaded("torch.cuda")
    if cuda is None or not cuda.is_initialized():
        return []
    devices = []
    for i in range(cuda.device_count()):
        stats = cuda.memory_stats(i)
        allocated = num(stats.get("allocated_bytes.all.current"))
        reserved = num(stats.get("reserved_bytes.all.current"))
        peak_reserved = num(stats.get("reserved_bytes.all.peak"))
        if not (allocated or reserved or peak_reserved):
            continue  # a device this process's allocator never used
        dev = device(i, torch_uuid(probe, cuda, i), allocated, reserved)
        dev.update(stranded=num(stats.get("inactive_split_bytes.all.current")),
                   limit=limit(cuda, i),
                   peak_allocated=num(stats.get("allocated_bytes.all.peak")),
                   peak_reserved=peak_reserved,
                   alloc_retries=num(stats.get("num_alloc_retries")),
                   ooms=num(stats.get("num_ooms")))
        devices.append(dev)
    _largest_free(probe, cuda, devices)
    return devices


def limit(cuda, index):
    """The per-process cap as the caching allocator computes it, or None when there is none."""
    try:
        getter = getattr(cuda, "get_per_process_memory_fraction", None)
        fraction = getter(index) if getter is not None else None
        if fraction is None or not 0 < fraction < 1:
            return None
        return int(fraction * cuda.get_device_properties(index).total_memory)
    except Exception:
        return None


def _expandable():
    """Whether PyTorch's allocator runs with expandable segments, from the variable that configures
    it (the first one set): its free blocks are then never counted as inactive split bytes."""
    conf = os.environ.get("PYTORCH_ALLOC_CONF") or os.environ.get("PYTORCH_CUDA_ALLOC_CONF") or ""
    return "expandable_segments:true" in conf.replace(" ", "").lower()


def _largest_free(probe, cuda, devices):
    """Largest free block from memory_snapshot(): rare, timed, and given up when slow. Taken when
    much is stranded in split blocks, or, under expandable segments (where nothing is), when much
    of the pool is cached free."""
    now = time.monotonic()
    key = "cached_free" if _expandable() else "stranded"
    large = any((d[key] or 0) >= _STRANDED_FOR_SNAPSHOT for d in devices)
    # Never while allocation history is recorded: memory_snapshot() from this thread, while the
    # job allocated, crashed the job on an H100 (torch 2.11, segmentation fault).
    if large and now >= probe.snap_next and not history_on(probe):
        began = time.perf_counter()
        try:
            largest = {}
            for segment in cuda.memory_snapshot():
                dev = segment.get("device")
                largest.setdefault(dev, 0)
                for block in segment.get("blocks", ()):
                    if block.get("state") == "inactive":
                        largest[dev] = max(largest[dev], num(block.get("size")) or 0)
        except Exception:
            probe.snap_next = float("inf")
            return
        cost = time.perf_counter() - began
        probe.snap = {dev: (size, now) for dev, size in largest.items()}
        probe.snap_period = 10.0 if cost <= 0.002 else 60.0
        probe.snap_next = now + probe.snap_period if cost <= 0.020 else float("inf")
    for d in devices:
        size, at = probe.snap.get(d["index"], (None, 0.0))
        if size is not None and now - at <= probe.snap_period + 5.0:
            d["largest_free_block"] = size
