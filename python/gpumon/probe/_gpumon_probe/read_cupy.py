"""CuPy's figures and its part of a map: only devices whose CUDA primary context is already active
(asked of the driver) and whose default pool holds bytes; the probe's own thread switches its
current device to each (``cudaSetDevice`` binds the existing context; the job's threads are not
affected). CuPy gives no block map and no allocation sites."""

from .common import FORKED, device, map_device, num
from .driver import cuda_uuid, driver


def read(probe, cupy):
    drv = driver(probe)
    count = drv.count() if drv is not None else None
    if not count:
        return []  # the driver is not loaded or not initialised: CuPy has not used a GPU
    if probe.forked_cuda:
        raise RuntimeError(FORKED)
    pool = cupy.get_default_memory_pool()
    devices = []
    for i in range(count):
        if not drv.active(i):
            continue  # switching to it would create a context
        cupy.cuda.runtime.setDevice(i)  # this thread only; the context exists already
        total = num(pool.total_bytes())
        if not total:
            continue
        dev = device(i, cuda_uuid(probe, i), num(pool.used_bytes()), total)
        dev.update(cached_free=num(pool.free_bytes()), limit=num(pool.get_limit()) or None)
        devices.append(dev)
    return devices


def map_devices(probe, cupy, budget):
    devices = []
    for fig in read(probe, cupy):
        cupy.cuda.runtime.setDevice(fig["index"])  # this thread only; the context exists
        dev = map_device(fig["index"], fig["uuid"])
        dev.update(allocated=fig["allocated"], reserved=fig["reserved"], free=fig["cached_free"],
                   segments_reason="CuPy's memory pool gives no block map",
                   sites_reason="CuPy records no allocation sites",
                   free_blocks=num(cupy.get_default_memory_pool().n_free_blocks()))
        devices.append(dev)
    return devices
