"""JAX's figures and its part of a map: only once its private table of backends
(``jax._src.xla_bridge._backends``) holds a GPU backend, whose ``local_devices()`` are read
(never ``jax.devices()``, which would initialise JAX); sites from ``device_memory_profile()``
(a gzipped pprof, read by ``pprof``), shapes from ``jax.live_arrays()``; the pprof as export."""

import os
import sys

from .common import FORKED, attr, device, first, loaded, map_device, num, reason
from .driver import cuda_uuid

_GPU_BACKENDS = ("cuda", "rocm", "gpu")


def read(probe, jax):
    bridge = loaded("jax._src.xla_bridge")
    if bridge is None:
        return []
    backends = attr(bridge, "_backends")
    if not isinstance(backends, dict):
        raise LookupError("cannot tell whether JAX has initialised a GPU: "
                          "jax._src.xla_bridge._backends not found")
    gpu = [(name, backends.get(name)) for name in _GPU_BACKENDS]
    gpu = [(name, backend) for name, backend in gpu if backend is not None]
    if gpu and probe.forked_cuda:
        raise RuntimeError(FORKED)
    devices = []
    for name, backend in gpu:
        listed = getattr(backend, "local_devices", None) or backend.devices
        for d in listed():
            stats = d.memory_stats() or {}
            index = _index(d)
            uuid = cuda_uuid(probe, index) if name != "rocm" else None
            dev = device(index, uuid, num(stats.get("bytes_in_use")),
                         first(stats, "pool_bytes", "bytes_reserved"))
            dev.update(largest_free_block=num(stats.get("largest_free_block_bytes")),
                       largest_alloc=num(stats.get("largest_alloc_size")),
                       limit=num(stats.get("bytes_limit")),
                       peak_allocated=num(stats.get("peak_bytes_in_use")),
                       peak_reserved=first(stats, "peak_pool_bytes", "peak_bytes_reserved"))
            devices.append(dev)
    return devices


def _index(d):
    index = num(getattr(d, "local_hardware_id", None))
    return num(d.id) if index is None else index


def map_devices(probe, jax, budget):
    """The JAX part of a map: the pool figures, sites and the largest shapes per device."""
    devices, by_index = [], {}
    for fig in read(probe, jax):
        dev = map_device(fig["index"], fig["uuid"])
        dev.update(allocated=fig["allocated"], reserved=fig["reserved"],
                   free=fig["cached_free"], largest_free=fig["largest_free_block"],
                   segments_reason="JAX's allocator gives no block map",
                   sites_reason="jax.profiler is not loaded")
        devices.append(dev)
        by_index[fig["index"]] = dev
    if not devices:
        return devices
    profiler = _profiler()
    if profiler is not None:
        try:
            dirs = [os.path.dirname(attr(m, "__file__") or "")
                    for m in (jax, sys.modules.get("jaxlib")) if m is not None]
            profile_sites(profiler.device_memory_profile(_gpu_backend()), by_index, dirs)
        except Exception as exc:
            for dev in devices:
                dev["sites_reason"] = "device_memory_profile: " + reason(exc)
    if attr(jax, "live_arrays") is not None:
        try:
            _shapes(jax, by_index)
        except Exception:
            pass
    return devices


def profile_sites(profile, by_index, framework_dirs):
    """Fills ``sites`` and ``unattributed`` of the map's devices (by index) from a pprof device
    memory profile. Samples of no bytes (compiled executables) are left out."""
    from .pprof import label_index, samples
    from .sites import Sites
    per_device = {}
    for label, blocks, size, frames in samples(profile):
        index = label_index(label)
        if index not in by_index and len(by_index) == 1:
            index = next(iter(by_index))
        if index not in by_index or size <= 0:
            continue
        if frames:
            sites = per_device.setdefault(index, Sites(framework_dirs))
            sites.add(sites.site(frames), blocks, size)
        else:
            bare = by_index[index]["unattributed"] or {"blocks": 0, "bytes": 0}
            bare["blocks"] += blocks
            bare["bytes"] += size
            by_index[index]["unattributed"] = bare
    for index, dev in by_index.items():
        dev["sites"] = per_device[index].top(20) if index in per_device else []
        dev["sites_reason"] = None


def _shapes(jax, by_index):
    """The 20 largest (shape, dtype) groups of live arrays per device index."""
    groups = {}
    for n, array in enumerate(jax.live_arrays()):
        if n >= 100000:
            break
        try:
            shard = array.sharding.shard_shape(array.shape)
            size = array.dtype.itemsize
            for d in shard:
                size *= d
            key = (str(tuple(array.shape)), str(array.dtype))
            for dev in array.devices():
                entry = groups.setdefault(_index(dev), {}).setdefault(key, [0, 0])
                entry[0] += 1
                entry[1] += size
        except Exception:
            continue
    for index, found in groups.items():
        if index in by_index:
            ranked = sorted(found.items(), key=lambda kv: (-kv[1][1], kv[0]))[:20]
            by_index[index]["shapes"] = [{"shape": s, "dtype": t, "count": c, "bytes": b}
                                         for (s, t), (c, b) in ranked]


def _profiler():
    """jax.profiler, or jax._src.profiler where device_memory_profile is defined (JAX imports
    that one itself); never imported here."""
    for name in ("jax.profiler", "jax._src.profiler"):
        module = loaded(name)
        if module is not None and attr(module, "device_memory_profile") is not None:
            return module
    return None


def _gpu_backend():
    """The name of JAX's initialised GPU backend, or None."""
    bridge = loaded("jax._src.xla_bridge")
    backends = attr(bridge, "_backends") if bridge is not None else None
    names = [n for n in _GPU_BACKENDS if isinstance(backends, dict) and n in backends]
    return names[0] if names else None


def export():
    """(``pb.gz``, the device memory profile's bytes), or None before JAX uses a GPU."""
    backend, profiler = _gpu_backend(), _profiler()
    if backend is None or profiler is None:
        return None
    return "pb.gz", bytes(profiler.device_memory_profile(backend))
