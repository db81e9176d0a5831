"""The memory map, ``<pid>.map.json`` (``gpumon.map/1``, docs/memory-map-format.md): taken when
gpumon asks (the request channel) and at an OOM (PyTorch's observer, in the job's thread), never
on a tick by itself; each framework's part from its own module; bounded to 2048 runs and 1 MiB
(taken once more with no runs when names alone are too long); a slow map doubles the gap before
the next one (up to 5 minutes)."""

import time

from .common import part
from .files import encode

MAX_RUNS = 2048
MAX_MAP_BYTES = 1 << 20
_MAP_GAP_MAX = 300.0
_MAP_SLOW = 0.250
_OOM_GAP = 1.0  # seconds between maps at OOMs (a job that catches OOMs in a loop)


def _mapper(name, snapshot=None):
    def map_devices(probe, module, budget):
        if snapshot is not None:
            return part(name).map_devices(probe, module, budget, snapshot)
        return part(name).map_devices(probe, module, budget)
    return map_devices


def _mappers(torch_only, snapshot):
    torch = (("pytorch", "torch", _mapper("torch_map", snapshot)),)
    if torch_only:
        return torch
    return torch + (("jax", "jax", _mapper("read_jax")), ("cupy", "cupy", _mapper("read_cupy")),
                    ("tensorflow", "tensorflow", _mapper("read_tensorflow")))


def take_map(probe, reason, request_id, oom, torch_only=False, given=None):
    """Writes ``<pid>.map.json``: None, or why not. ``given``: (at_ms, seconds, snapshot) of a
    PyTorch snapshot the job's main thread took, mapped instead of one taken here (its seconds
    count in took_us). ``torch_only``: PyTorch's part alone (at an OOM, in the job's thread,
    where CuPy's reader would switch devices)."""
    if not probe.map_lock.acquire(timeout=2.0):
        return "another map is being written"
    try:
        began, at_ms = time.perf_counter(), time.time_ns() // 1000000
        if given is not None:
            at_ms, began = given[0], began - given[1]
        mappers = _mappers(torch_only, given[2] if given is not None else None)
        for budget in (MAX_RUNS, 0):  # with no runs left, only names can still be too long
            doc = {"schema": "gpumon.map/1", "pid": probe.pid, "start_time": probe.start_time,
                   "at_ms": at_ms, "reason": reason, "request_id": request_id,
                   "took_us": 0, "oom": oom, "frameworks": probe.frameworks(mappers, budget)}
            doc["took_us"] = int((time.perf_counter() - began) * 1e6)
            data = encode(doc).encode("utf-8", "replace")
            if len(data) <= MAX_MAP_BYTES:
                probe.write_file("%d.map.json" % probe.pid, data)
                probe.map_at_ms = at_ms
                break
        if time.perf_counter() - began > _MAP_SLOW:
            probe.map_gap = min(probe.map_gap * 2, _MAP_GAP_MAX)
        return None if len(data) <= MAX_MAP_BYTES else "the map exceeds 1 MiB"
    finally:
        probe.map_lock.release()


def oom_map(probe, oom):
    """The map at a failing request (at most one a second), PyTorch's part only."""
    now = time.monotonic()
    if now < probe.oom_next:
        return
    probe.oom_next = now + _OOM_GAP
    take_map(probe, "oom", None, oom, torch_only=True)
