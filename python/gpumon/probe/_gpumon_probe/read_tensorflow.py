"""TensorFlow's figures and its part of a map: only once
``tensorflow.python.eager.context.context_safe()`` returns a context whose ``_initialized`` is true
(TensorFlow has then created its GPU devices); current and peak bytes per logical GPU, nothing
more (no pool size, block map or sites). Written from TensorFlow's sources and tested against a
stand-in only: TensorFlow is not installed on the GPU test machines."""

from .common import attr, device, loaded, map_device, num


def read(probe, tf):
    context = loaded("tensorflow.python.eager.context")
    safe = attr(context, "context_safe") if context is not None else None
    if safe is None:
        raise LookupError("cannot tell whether TensorFlow has created its GPU devices: "
                          "tensorflow.python.eager.context.context_safe not found")
    ctx = safe()
    if ctx is None or getattr(ctx, "_initialized", False) is not True:
        return []
    devices = []
    for logical in ctx.list_logical_devices("GPU"):
        info = ctx.get_memory_info(logical.name)
        dev = device(int(logical.name.rsplit(":", 1)[1]), None, num(info.get("current")), None)
        dev["peak_allocated"] = num(info.get("peak"))
        devices.append(dev)
    return devices


def map_devices(probe, tf, budget):
    devices = []
    for fig in read(probe, tf):
        dev = map_device(fig["index"], None)
        dev.update(allocated=fig["allocated"],
                   segments_reason="TensorFlow gives no block map (current and peak bytes only)",
                   sites_reason="TensorFlow records no allocation sites")
        devices.append(dev)
    return devices
