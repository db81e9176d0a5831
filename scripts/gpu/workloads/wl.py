"""Shared by the workload corpus: each job prints its own allocator figures every step as one JSON
line on stdout ({"ev": "step", ...}), and on an out-of-memory error one {"ev": "oom", ...} line with
the figures at the failing request, then the framework's own error text on stderr (what gpumon's log
follower reads), and exits 1. These lines are the truth the alert benchmark scores gpumon against
(scripts/alert_bench.py). Nothing here imports a framework the job did not import itself."""
import json
import os
import sys
import time

MiB = 1 << 20
GiB = 1 << 30


def env_f(name, default):
    return float(os.environ.get(name, default))


def emit(**fields):
    fields.setdefault("t", round(time.time(), 3))
    print(json.dumps(fields, separators=(",", ":")), flush=True)


class Torch:
    """PyTorch's caching allocator figures for device 0."""

    def __init__(self):
        import torch
        self.torch = torch
        self.total = torch.cuda.get_device_properties(0).total_memory
        self.limit = None

    def cap(self, gib):
        """A per-process cap (set_per_process_memory_fraction) of `gib` GiB."""
        self.torch.cuda.set_per_process_memory_fraction(gib * GiB / self.total)
        self.limit = int(gib * GiB)

    def figures(self):
        s = self.torch.cuda.memory_stats()
        free, _ = self.torch.cuda.mem_get_info()
        return {
            "allocated": s.get("allocated_bytes.all.current", 0),
            "reserved": s.get("reserved_bytes.all.current", 0),
            "stranded": s.get("inactive_split_bytes.all.current", 0),
            "peak_allocated": s.get("allocated_bytes.all.peak", 0),
            "retries": s.get("num_alloc_retries", 0),
            "ooms": s.get("num_ooms", 0),
            "limit": self.limit,
            "gpu_free": free,
        }

    def step(self, i, **extra):
        """One step's figures; the peak is reset so each line's peak is that step's own."""
        emit(ev="step", step=i, **self.figures(), **extra)
        self.torch.cuda.reset_peak_memory_stats()

    def oom(self, exc, request=None):
        emit(ev="oom", request=request, text=str(exc).splitlines()[0][:400], **self.figures())
        print(f"torch.OutOfMemoryError: {exc}", file=sys.stderr, flush=True)
        sys.exit(1)


class Jax:
    """XLA's BFC allocator figures for the first GPU."""

    def __init__(self):
        import jax
        self.dev = jax.devices()[0]

    def figures(self):
        s = self.dev.memory_stats() or {}
        return {
            "allocated": s.get("bytes_in_use"),
            "reserved": s.get("pool_bytes", s.get("bytes_reserved")),
            "largest_free_block": s.get("largest_free_block_bytes"),
            "peak_allocated": s.get("peak_bytes_in_use"),
            "limit": s.get("bytes_limit"),
        }

    def step(self, i, **extra):
        emit(ev="step", step=i, **self.figures(), **extra)

    def oom(self, exc, request=None):
        text = str(exc)
        emit(ev="oom", request=request, text=text.splitlines()[0][:400], **self.figures())
        print(f"{type(exc).__module__}.{type(exc).__name__}: {text}", file=sys.stderr, flush=True)
        sys.exit(1)


class Cupy:
    """CuPy's default memory pool."""

    def __init__(self):
        import cupy
        self.cupy = cupy
        self.pool = cupy.get_default_memory_pool()

    def figures(self):
        free, _ = self.cupy.cuda.runtime.memGetInfo()
        return {
            "allocated": self.pool.used_bytes(),
            "reserved": self.pool.total_bytes(),
            "limit": self.pool.get_limit() or None,
            "gpu_free": free,
        }

    def step(self, i, **extra):
        emit(ev="step", step=i, **self.figures(), **extra)

    def oom(self, exc, request=None):
        emit(ev="oom", request=request, text=str(exc).splitlines()[0][:400], **self.figures())
        print(f"cupy.cuda.memory.OutOfMemoryError: {exc}", file=sys.stderr, flush=True)
        sys.exit(1)


def run_for(seconds):
    """Steps until `seconds` have passed: yields the step number."""
    end = time.time() + seconds
    i = 0
    while time.time() < end:
        yield i
        i += 1
