"""What every part of the probe shares: the running probe, and reading the job's modules and
figures without importing anything or running their code."""

import sys

NAME = "gpumon-probe"  # the thread's name
FORKED = "forked from a process that had initialised CUDA: the pool figures are the parent's"

MAP_GAP = 5.0  # seconds between maps or exports asked for, at least

current = None  # the running probe (probe.Probe) of this process, once started


def attr(module, name):
    """A module attribute without triggering a lazy module ``__getattr__``."""
    return getattr(module, "__dict__", {}).get(name)


def ready(module):
    """Loaded and no longer being imported."""
    spec = attr(module, "__spec__")
    return module is not None and not getattr(spec, "_initializing", False)


def loaded(name):
    """``sys.modules[name]`` once it has finished importing, else None."""
    module = sys.modules.get(name)
    return module if ready(module) else None


def num(value):
    if value is None or isinstance(value, bool):
        return None
    try:
        return value.__index__()
    except Exception:
        return None


def first(stats, *keys):
    for key in keys:
        if stats.get(key) is not None:
            return num(stats[key])
    return None


def reason(exc):
    """One line, at most 300 characters: ``Type: message``."""
    try:
        text = "%s: %s" % (type(exc).__name__, exc)
    except Exception:
        text = type(exc).__name__
    return (text.strip().splitlines() or [""])[0][:300]


def clip(value, limit):
    if isinstance(value, str):
        return value[:limit]
    return "" if value is None else str(value)[:limit]


def device(index, uuid, allocated, reserved):
    """A device entry of ``<pid>.json``, every figure the framework does not give null."""
    cached = reserved - allocated if allocated is not None and reserved is not None else None
    return {"index": index, "uuid": uuid, "allocated": allocated, "reserved": reserved,
            "cached_free": cached, "stranded": None, "largest_free_block": None,
            "largest_alloc": None, "limit": None, "peak_allocated": None, "peak_reserved": None,
            "alloc_retries": None, "ooms": None}


def map_device(index, uuid):
    """A device entry of ``<pid>.map.json`` (gpumon.map/1), every figure not yet had null."""
    return {"index": index, "uuid": uuid, "allocated": None, "reserved": None, "free": None,
            "largest_free": None, "holes": None, "segments": None, "segments_reason": None,
            "segments_total": None, "elided": None, "sites": None, "sites_reason": None,
            "stranding_sites": None, "unattributed": None, "shapes": None, "free_blocks": None}


def torch_uuid(probe, cuda, index):
    """torch's ``get_device_properties(index).uuid`` in NVML's form (``GPU-…``), cached (the
    figures and the maps both name a device by it)."""
    key = ("torch", index)
    if key not in probe.uuids:
        try:
            found = str(cuda.get_device_properties(index).uuid)
        except Exception:
            return None
        probe.uuids[key] = found if found.startswith("GPU-") else "GPU-" + found
    return probe.uuids[key]


def part(name):
    """A part of the probe (``_gpumon_probe.<name>``), imported at its first use."""
    full = __package__ + "." + name
    module = sys.modules.get(full)
    if module is None:
        __import__(full)
        module = sys.modules[full]
    return module
