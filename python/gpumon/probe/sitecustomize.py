"""gpumon allocator probe: a Python start-up hook (a ``sitecustomize`` module).

gpumon writes this file into a private 0700 directory and puts that directory first on
PYTHONPATH of the jobs it starts (``gpumon run``, ``gpumon probe env``), so Python's ``site``
imports it at start-up in every process that inherits the variable. It then:

1. runs the ``sitecustomize`` it shadows (the next one on sys.path, leaving out its own
   directory and GPUMON_PROBE_HOOK_DIR) as the module ``sitecustomize``, so the job sees what
   it would see without gpumon; that module's exceptions reach ``site`` unchanged, which prints
   its usual "Error in sitecustomize" line. With none to chain to, it leaves no
   ``sitecustomize`` module behind (``site`` is told there is none, as without gpumon);
2. unless GPUMON_PROBE_DIR is unset or empty, or GPUMON_PROBE_DISABLE=1, starts one daemon
   thread, "gpumon-probe", which every GPUMON_PROBE_INTERVAL_MS (default 1000, clamped to
   100..60000) writes ``<GPUMON_PROBE_DIR>/<pid>.json`` in the format ``gpumon.probe/1``
   (docs/probe-format.md): the memory-pool figures of the GPU frameworks this process has
   loaded and initialised;
3. each tick looks for a request from gpumon, ``<pid>.request`` (a regular file of this user,
   mode 0600, at most 128 bytes, one of four fixed verbs; docs/memory-map-format.md), and answers
   in the next file: ``map`` writes ``<pid>.map.json`` (``gpumon.map/1``: the pool's segments and
   holes, summarised here, and the lines of the job's code that hold the memory), ``record-on``
   and ``record-off`` start and stop PyTorch's allocation history, ``export`` writes the pool in
   the framework's own format (PyTorch's snapshot pickle, JAX's pprof);
4. once the process has initialised CUDA itself (a call queued with torch.cuda._lazy_call),
   attaches PyTorch's OOM observer, which writes the map at a failing request, and starts
   recording allocation history when GPUMON_PROBE_RECORD=1.

Rules it keeps, since it runs inside other people's jobs:
- It never imports torch, jax, cupy or tensorflow (only ``sys.modules.get``), reads a framework
  only once that framework has initialised its device, and never creates a CUDA context: the
  CUDA driver is used only if the process has already loaded it (RTLD_NOLOAD), it is never
  initialised here, and a device is switched to only if its primary context is already active.
- It imports only the standard library: os and sys (always loaded), and once the probe starts
  threading and atexit (time, already loaded by threading); ctypes only once jax or cupy is
  loaded, on Python 3.13+ at the first os.fork(), and for a map or export while PyTorch
  records allocation history (torch has imported it by then); pickle only for a PyTorch export, gzip only
  for a JAX map. json is never imported: a small encoder writes the files (a map goes through
  json's C encoder when the process has loaded json itself, as torch and JAX do: the same text).
- Every exception is caught; it prints nothing, emits no warning, leaves signal handlers,
  sys.excepthook and the exit status alone. After 5 failed ticks in a row it stops, writing the
  reason into "stopped" when it still can.
- Files are written atomically: ``.<pid>.json.tmp`` (O_EXCL|O_NOFOLLOW, mode 0600) in the same
  directory, then os.replace. Missing probe directories are created 0700; a probe directory that
  is a symbolic link or belongs to another user is refused.
- Around os.fork() it stops its thread (so Python 3.12+ does not warn about forking a
  multi-threaded process because of it) and restarts it in the parent and in the child; the
  child writes under its own pid. At exit it waits at most 0.5 s for a write in progress.
- Bounded work per tick: one statistics call per framework device and one failed openat of the
  request file; torch's memory snapshot only when stranded bytes (under expandable segments,
  cached free bytes) are large, at most every 10 s, and less often or never when it is slow. Maps
  only when asked (at most one every 5 s, less often when slow) and at an OOM (at most one a
  second), bounded to 2048 runs and 1 MiB. While PyTorch records allocation history, no
  snapshot is taken from the probe's thread (one crashed a job on an H100): the job's main
  thread takes it at its next bytecode boundary (a pending call), and the probe's thread maps
  it (docs/probe-format.md, "While PyTorch records allocation history").
No hook runs under ``python -S``, ``-E`` or ``-I``.
"""

import os
import sys

_NAME = "gpumon-probe"
_MAX_FAILURES = 5
_STRANDED_FOR_SNAPSHOT = 256 << 20
_FORKED = "forked from a process that had initialised CUDA: the pool figures are the parent's"
_ESCAPES = {i: "\\u%04x" % i for i in range(32)}
_ESCAPES.update({ord('"'): '\\"', ord("\\"): "\\\\"})
_probe = None
_fork_cuda = False
_pending = None  # the ctypes callback of _restart_later, kept alive
_pending_left = 0
_fork_site = None  # (frame, f_lasti) of the os.fork() call under way, on Python 3.13+


def _real(path):
    try:
        return os.path.realpath(path or os.getcwd())
    except Exception:
        return path


def _find_shadowed():
    """The spec of the ``sitecustomize`` this file shadows, or None."""
    try:
        own = _real(__file__)
        skip = {os.path.dirname(own)}
        if os.environ.get("GPUMON_PROBE_HOOK_DIR"):
            skip.add(_real(os.environ["GPUMON_PROBE_HOOK_DIR"]))
        paths = [p for p in sys.path if isinstance(p, str) and _real(p) not in skip]
        spec = sys.modules["_frozen_importlib_external"].PathFinder.find_spec("sitecustomize", paths)
        if spec is None or (spec.origin and _real(spec.origin) == own):
            return None
        return spec
    except Exception:
        return None


def _run_shadowed(spec):
    module = sys.modules["_frozen_importlib"].module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    if spec.loader is not None:
        spec.loader.exec_module(module)


def _attr(module, name):
    """A module attribute without triggering a lazy module ``__getattr__``."""
    return getattr(module, "__dict__", {}).get(name)


def _ready(module):
    """Loaded and no longer being imported."""
    spec = _attr(module, "__spec__")
    return module is not None and not getattr(spec, "_initializing", False)


def _num(value):
    if value is None or isinstance(value, bool):
        return None
    try:
        return value.__index__()
    except Exception:
        return None


def _first(stats, *keys):
    for key in keys:
        if stats.get(key) is not None:
            return _num(stats[key])
    return None


def _reason(exc):
    try:
        text = "%s: %s" % (type(exc).__name__, exc)
    except Exception:
        text = type(exc).__name__
    return (text.strip().splitlines() or [""])[0][:300]


def _json(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, str):
        return '"' + value.translate(_ESCAPES) + '"'
    if isinstance(value, dict):
        return "{" + ", ".join(_json(str(k)) + ": " + _json(v) for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_json(v) for v in value) + "]"
    raise TypeError("cannot encode %s" % type(value).__name__)


def _encode(value):
    """``_json(value)``, by the json module's C encoder when the process has loaded it already
    (torch and JAX do; it is never imported here) and no string needed escaping (its escapes
    differ from ours, so then ours run): the same text either way, faster for a large map."""
    json = sys.modules.get("json")
    dumps = _attr(json, "dumps") if _ready(json) else None
    if dumps is not None:
        try:
            text = dumps(value, ensure_ascii=False, check_circular=False)
            if type(text) is str and "\\" not in text:
                return text
        except Exception:
            pass
    return _json(value)


def _device(index, uuid, allocated, reserved):
    cached = reserved - allocated if allocated is not None and reserved is not None else None
    return {"index": index, "uuid": uuid, "allocated": allocated, "reserved": reserved,
            "cached_free": cached, "stranded": None, "largest_free_block": None,
            "largest_alloc": None, "limit": None, "peak_allocated": None, "peak_reserved": None,
            "alloc_retries": None, "ooms": None}


def _start_time():
    """Process start in Unix seconds, as gpumon's /proc reader computes it; None off Linux."""
    try:
        with open("/proc/self/stat", "rb") as f:
            ticks = int(f.read().rsplit(b")", 1)[1].split()[19])
        with open("/proc/stat", "rb") as f:
            for line in f:
                if line.startswith(b"btime "):
                    return int(line.split()[1]) + ticks // os.sysconf("SC_CLK_TCK")
    except Exception:
        pass
    return None


class _Driver:
    """The CUDA driver API, reached only when the process has already loaded it; never cuInit'ed."""

    def __init__(self, ctypes, lib):
        self.c = ctypes
        self.lib = lib

    def count(self):
        """Visible devices, or None while the driver is not initialised (no CUDA use yet)."""
        n = self.c.c_int()
        return n.value if self.lib.cuDeviceGetCount(self.c.byref(n)) == 0 else None

    def handle(self, ordinal):
        dev = self.c.c_int()
        return dev.value if self.lib.cuDeviceGet(self.c.byref(dev), ordinal) == 0 else None

    def active(self, ordinal):
        """Whether the device's primary context exists already (so using it creates none)."""
        dev, flags, on = self.handle(ordinal), self.c.c_uint(), self.c.c_int()
        if dev is None:
            return False
        rc = self.lib.cuDevicePrimaryCtxGetState(dev, self.c.byref(flags), self.c.byref(on))
        return rc == 0 and on.value != 0

    def uuid(self, ordinal):
        dev, raw = self.handle(ordinal), (self.c.c_ubyte * 16)()
        get = getattr(self.lib, "cuDeviceGetUuid_v2", None) or self.lib.cuDeviceGetUuid
        if dev is None or get(raw, dev) != 0:
            return None
        h = bytes(raw).hex()
        return "GPU-%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


def _driver(probe):
    if probe.driver is None:
        import ctypes
        name = os.environ.get("GPUMON_PROBE_LIBCUDA") or "libcuda.so.1"
        try:
            probe.driver = _Driver(ctypes, ctypes.CDLL(name, mode=os.RTLD_NOLOAD))
        except OSError:
            return None
    return probe.driver


def _cuda_initialised(probe):
    if "ctypes" not in sys.modules:
        return False
    drv = _driver(probe)
    return drv is not None and drv.count() is not None


def _cuda_uuid(probe, ordinal):
    key = ("cuda", ordinal)
    if key not in probe.uuids:
        drv = _driver(probe)
        uuid = drv.uuid(ordinal) if drv is not None and ordinal is not None else None
        if uuid is None:
            return None
        probe.uuids[key] = uuid
    return probe.uuids[key]


def _torch_uuid(probe, cuda, index):
    key = ("torch", index)
    if key not in probe.uuids:
        try:
            uuid = str(cuda.get_device_properties(index).uuid)
        except Exception:
            return None
        probe.uuids[key] = uuid if uuid.startswith("GPU-") else "GPU-" + uuid
    return probe.uuids[key]


def _torch_limit(cuda, index):
    """The per-process cap as the caching allocator computes it, or None when there is none."""
    try:
        getter = getattr(cuda, "get_per_process_memory_fraction", None)
        fraction = getter(index) if getter is not None else None
        if fraction is None or not 0 < fraction < 1:
            return None
        return int(fraction * cuda.get_device_properties(index).total_memory)
    except Exception:
        return None


def _read_torch(probe, torch):
    cuda = sys.modules.get("torch.cuda")
    if not _ready(cuda) or not cuda.is_initialized():
        return []
    devices = []
    for i in range(cuda.device_count()):
        stats = cuda.memory_stats(i)
        allocated = _num(stats.get("allocated_bytes.all.current"))
        reserved = _num(stats.get("reserved_bytes.all.current"))
        peak_reserved = _num(stats.get("reserved_bytes.all.peak"))
        if not (allocated or reserved or peak_reserved):
            continue  # a device this process's allocator never used
        dev = _device(i, _torch_uuid(probe, cuda, i), allocated, reserved)
        dev.update(stranded=_num(stats.get("inactive_split_bytes.all.current")),
                   limit=_torch_limit(cuda, i),
                   peak_allocated=_num(stats.get("allocated_bytes.all.peak")),
                   peak_reserved=peak_reserved,
                   alloc_retries=_num(stats.get("num_alloc_retries")),
                   ooms=_num(stats.get("num_ooms")))
        devices.append(dev)
    _torch_largest_free(probe, cuda, devices)
    return devices


def _expandable():
    """Whether PyTorch's allocator runs with expandable segments, from the variable that configures
    it (the first one set): its free blocks are then never counted as inactive split bytes."""
    conf = os.environ.get("PYTORCH_ALLOC_CONF") or os.environ.get("PYTORCH_CUDA_ALLOC_CONF") or ""
    return "expandable_segments:true" in conf.replace(" ", "").lower()


def _torch_largest_free(probe, cuda, devices):
    """Largest free block from memory_snapshot(): rare, timed, and given up when slow. Taken when
    much is stranded in split blocks, or, under expandable segments (where nothing is), when much
    of the pool is cached free."""
    import time
    now = time.monotonic()
    key = "cached_free" if _expandable() else "stranded"
    large = any((d[key] or 0) >= _STRANDED_FOR_SNAPSHOT for d in devices)
    # Never while allocation history is recorded: memory_snapshot() from this thread, while the
    # job allocated, crashed the job on an H100 (torch 2.11, segmentation fault).
    if large and now >= probe.snap_next and not _history_on(probe):
        began = time.perf_counter()
        try:
            largest = {}
            for segment in cuda.memory_snapshot():
                dev = segment.get("device")
                largest.setdefault(dev, 0)
                for block in segment.get("blocks", ()):
                    if block.get("state") == "inactive":
                        largest[dev] = max(largest[dev], _num(block.get("size")) or 0)
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


def _read_jax(probe, jax):
    bridge = sys.modules.get("jax._src.xla_bridge")
    if not _ready(bridge):
        return []
    backends = _attr(bridge, "_backends")
    if not isinstance(backends, dict):
        raise LookupError("cannot tell whether JAX has initialised a GPU: "
                          "jax._src.xla_bridge._backends not found")
    gpu = [(name, backends.get(name)) for name in ("cuda", "rocm", "gpu")]
    gpu = [(name, backend) for name, backend in gpu if backend is not None]
    if gpu and probe.forked_cuda:
        raise RuntimeError(_FORKED)
    devices = []
    for name, backend in gpu:
        listed = getattr(backend, "local_devices", None) or backend.devices
        for d in listed():
            stats = d.memory_stats() or {}
            index = _num(getattr(d, "local_hardware_id", None))
            index = _num(d.id) if index is None else index
            uuid = _cuda_uuid(probe, index) if name != "rocm" else None
            dev = _device(index, uuid, _num(stats.get("bytes_in_use")),
                          _first(stats, "pool_bytes", "bytes_reserved"))
            dev.update(largest_free_block=_num(stats.get("largest_free_block_bytes")),
                       largest_alloc=_num(stats.get("largest_alloc_size")),
                       limit=_num(stats.get("bytes_limit")),
                       peak_allocated=_num(stats.get("peak_bytes_in_use")),
                       peak_reserved=_first(stats, "peak_pool_bytes", "peak_bytes_reserved"))
            devices.append(dev)
    return devices


def _read_cupy(probe, cupy):
    drv = _driver(probe)
    count = drv.count() if drv is not None else None
    if not count:
        return []  # the driver is not loaded or not initialised: CuPy has not used a GPU
    if probe.forked_cuda:
        raise RuntimeError(_FORKED)
    pool = cupy.get_default_memory_pool()
    devices = []
    for i in range(count):
        if not drv.active(i):
            continue  # switching to it would create a context
        cupy.cuda.runtime.setDevice(i)  # this thread only; the context exists already
        total = _num(pool.total_bytes())
        if not total:
            continue
        dev = _device(i, _cuda_uuid(probe, i), _num(pool.used_bytes()), total)
        dev.update(cached_free=_num(pool.free_bytes()), limit=_num(pool.get_limit()) or None)
        devices.append(dev)
    return devices


def _read_tensorflow(probe, tf):
    context = sys.modules.get("tensorflow.python.eager.context")
    safe = _attr(context, "context_safe") if _ready(context) else None
    if safe is None:
        raise LookupError("cannot tell whether TensorFlow has created its GPU devices: "
                          "tensorflow.python.eager.context.context_safe not found")
    ctx = safe()
    if ctx is None or getattr(ctx, "_initialized", False) is not True:
        return []
    devices = []
    for logical in ctx.list_logical_devices("GPU"):
        info = ctx.get_memory_info(logical.name)
        dev = _device(int(logical.name.rsplit(":", 1)[1]), None, _num(info.get("current")), None)
        dev["peak_allocated"] = _num(info.get("peak"))
        devices.append(dev)
    return devices


_READERS = (("pytorch", "torch", _read_torch), ("jax", "jax", _read_jax),
            ("cupy", "cupy", _read_cupy), ("tensorflow", "tensorflow", _read_tensorflow))

# ---- The memory map (gpumon.map/1, docs/memory-map-format.md): taken on request, at an OOM ----

_BIG_BLOCK = 64 << 20  # a block this large is a run of its own
_HOLE_UPPERS = (1 << 20, 8 << 20, 64 << 20, 512 << 20, None)
_MAX_RUNS = 2048
_MAX_MAP_BYTES = 1 << 20
_MAX_SKIPS = 1024  # innermost frames whose stacks _own_frame remembers
_STATES = {"active_allocated": "a", "inactive": "f", "active_pending_free": "p"}
_NO_HISTORY = "allocation history is not being recorded"


def _clip(value, limit):
    if isinstance(value, str):
        return value[:limit]
    return "" if value is None else str(value)[:limit]


class _Own(dict):
    """filename -> whether it is the job's own code: not under a framework's package or the
    standard library, not in site-/dist-packages, not <frozen ...>."""

    def __init__(self, framework_dirs):
        super().__init__()
        self.skip = tuple(d.rstrip(os.sep) + os.sep for d in framework_dirs if d)
        self.skip += (os.path.dirname(os.__file__).rstrip(os.sep) + os.sep,)

    def __missing__(self, filename):
        name = filename if isinstance(filename, str) else ""
        own = not (name.startswith("<frozen") or name.startswith(self.skip)
                   or "/site-packages/" in name or "/dist-packages/" in name)
        self[filename] = own
        return own


class _Sites:
    """Allocated blocks aggregated by their first frame in the job's own code."""

    def __init__(self, framework_dirs):
        self.own = _Own(framework_dirs)
        self.keys, self.by_site = {}, {}  # id of a frame dict -> its key; key -> [blocks, bytes]

    def site(self, frames):
        """(file, line, function) of the first own frame, innermost first; else the innermost.
        PyTorch shares one dict per distinct frame among its stacks: keys are cached by the
        frame's identity, which holds while the snapshot is summarised."""
        own, chosen = self.own, frames[0]
        for frame in frames:
            if own[frame["filename"]]:
                chosen = frame
                break
        return self.keys.get(id(chosen)) or self.key(chosen)

    def key(self, frame):
        key = self.keys[id(frame)] = _site_key(frame)
        return key

    def add(self, key, blocks, size):
        entry = self.by_site.get(key)
        if entry is None:
            self.by_site[key] = [blocks, size]
        else:
            entry[0] += blocks
            entry[1] += size

    def top(self, n):
        ranked = sorted(self.by_site.items(), key=lambda kv: (-kv[1][1], kv[0]))[:n]
        return [{"file": f, "line": line, "function": fn, "blocks": b, "bytes": s}
                for (f, line, fn), (b, s) in ranked]


def _site_key(frame):
    return (_clip(frame.get("filename"), 256), _num(frame.get("line")) or 0,
            _clip(frame.get("name"), 128))


def _map_device(index, uuid):
    return {"index": index, "uuid": uuid, "allocated": None, "reserved": None, "free": None,
            "largest_free": None, "holes": None, "segments": None, "segments_reason": None,
            "segments_total": None, "elided": None, "sites": None, "sites_reason": None,
            "stranding_sites": None, "unattributed": None, "shapes": None, "free_blocks": None}


def _summarise_torch(segments, budget, framework_dirs, recording):
    """One device's segments (PyTorch snapshot dicts) as a map device entry's figures.

    It runs in the job's process holding the GIL, so it is written for speed (issue 26: a
    50,000-block pool): one tight pass over the blocks counts each segment's runs and sums its
    bytes, making no object per block or per run (objects that stay alive also set off the job's
    garbage collector, whose full passes over a large heap cost more than the summary); runs are
    built for the segments kept only, sites only for the allocated blocks that have frames."""
    segments = sorted(segments, key=lambda s: _num(s.get("address")) or 0)
    alloc_state, free_state, big = "active_allocated", "inactive", _BIG_BLOCK
    holes, framed = [], []  # the size of every free block; allocated blocks with frames
    hole, framed_block = holes.append, framed.append
    run_counts, allocs, frees, totals, framed_ends = [], [], [], [], []
    allocated = reserved = blocks = pending = 0
    for seg in segments:
        seg_blocks = seg.get("blocks") or ()
        runs = seg_alloc = seg_free = 0
        last = None  # the state of the run being merged into; None after a big block
        for block in seg_blocks:
            size = block["size"]
            state = block["state"]
            if state == alloc_state:
                seg_alloc += size
                if block.get("frames"):
                    framed_block(block)
            elif state == free_state:
                seg_free += size
                hole(size)
            else:
                state = "p"
                pending += 1
            if state != last or size >= big:
                runs += 1
                last = state if size < big else None
        total = _num(seg.get("total_size")) or 0
        blocks += len(seg_blocks)
        allocated, reserved = allocated + seg_alloc, reserved + total
        run_counts.append(runs)
        allocs.append(seg_alloc)
        frees.append(seg_free)
        totals.append(total)
        framed_ends.append(len(framed))
    chosen, cuts = _bound_segments(run_counts, frees, totals, budget)
    kept, elided = [], None
    if chosen is not None:
        elided = {"segments": 0, "allocated": 0, "free": 0, "bytes": 0}
    for i, seg in enumerate(segments):
        if chosen is None or i in chosen:
            kept.append(_segment_entry(seg, totals[i], cuts.get(i)))
        else:
            elided["segments"] += 1
            elided["allocated"] += allocs[i]
            elided["free"] += frees[i]
            elided["bytes"] += totals[i]
    free = sum(frees)
    allocated_blocks = blocks - len(holes) - pending
    dev = {"allocated": allocated, "reserved": reserved, "free": free,
           "largest_free": max(holes) if holes else 0, "holes": _holes(holes, free),
           "segments": kept, "segments_total": len(segments), "elided": elided,
           "unattributed": {"blocks": allocated_blocks, "bytes": allocated}}
    if framed:
        sites, stranding, framed_bytes = _torch_sites(framed, framed_ends, frees, framework_dirs)
        dev.update(unattributed={"blocks": allocated_blocks - len(framed),
                                 "bytes": allocated - framed_bytes},
                   sites=sites.top(20), sites_reason=None, stranding_sites=stranding.top(5))
    elif recording:
        dev.update(sites=[], sites_reason=None, stranding_sites=[])
    else:
        dev.update(sites=None, sites_reason=_NO_HISTORY, stranding_sites=None)
    return dev


def _holes(sizes, total):
    """``holes``: [[upper, count, bytes], ...] of the free blocks' sizes (``total`` their sum)."""
    h1, h8, h64, h512 = _HOLE_UPPERS[:4]
    rest = [size for size in sizes if size >= h1]  # most holes are small: counted at C speed
    counts, sums = [len(sizes) - len(rest), 0, 0, 0, 0], [total - sum(rest), 0, 0, 0, 0]
    for size in rest:
        i = 1 if size < h8 else 2 if size < h64 else 3 if size < h512 else 4
        counts[i] += 1
        sums[i] += size
    return [list(h) for h in zip(_HOLE_UPPERS, counts, sums)]


def _segment_entry(seg, total, cut):
    """A kept segment's entry, its blocks merged into runs (cut to ``cut`` runs when given)."""
    states, big = _STATES, _BIG_BLOCK
    runs, last, last_state, last_big = [], None, None, False  # the run being merged into
    for block in seg.get("blocks") or ():
        size = block["size"]
        state = states.get(block["state"], "p")
        if state == last_state and size < big and not last_big:
            last[1] += 1
            last[2] += size
            if size > last[3]:
                last[3] = size
        else:
            last, last_state, last_big = [state, 1, size, size], state, size >= big
            runs.append(last)
    pool = seg.get("segment_pool_id") or (0, 0)
    entry = {"address": _num(seg.get("address")) or 0, "size": total,
             "kind": "small" if seg.get("segment_type") == "small" else "large",
             "expandable": seg.get("is_expandable") is True, "private": tuple(pool) != (0, 0),
             "stream": _num(seg.get("stream")) or 0, "runs": runs}
    if cut is not None:
        tail, entry["runs"] = runs[cut:], runs[:cut]
        entry["truncated"] = {"runs": len(tail),
                              "allocated": sum(r[2] for r in tail if r[0] == "a"),
                              "free": sum(r[2] for r in tail if r[0] == "f"),
                              "bytes": sum(r[2] for r in tail)}
    return entry


def _bound_segments(run_counts, frees, totals, budget):
    """Which segments to keep within ``budget`` runs: (None, {}) when all fit, else (the indices
    kept, {index: runs kept} of a segment too long on its own, cut short). The segments with the
    most free bytes and the largest segments are taken alternately."""
    if sum(run_counts) <= budget:
        return None, {}
    by_free = sorted(range(len(frees)), key=lambda i: -frees[i])
    by_size = sorted(range(len(totals)), key=lambda i: -totals[i])
    chosen, cuts, left = set(), {}, budget
    for pair in zip(by_free, by_size):
        for i in pair:
            if i in chosen or left <= 0:
                continue
            if run_counts[i] <= left:
                chosen.add(i)
                left -= run_counts[i]
            elif run_counts[i] > budget // 2:
                cuts[i] = left
                chosen.add(i)
                left = 0
        if left <= 0:
            break
    return chosen, cuts


def _torch_sites(framed, ends, frees, framework_dirs):
    """(sites, stranding sites, bytes attributed) of the allocated blocks that have frames:
    ``framed``, segment after segment (``ends``: where each segment's blocks end; ``frees``: its
    free bytes, which make its blocks' sites stranding sites). Blocks are tallied by the identity
    of their site's frame dict (PyTorch shares them between stacks); keys are made once a frame."""
    sites, stranding = _Sites(framework_dirs), _Sites(framework_dirs)
    own, skips, start = sites.own, {}, 0
    by_frame, by_key = {}, {}  # id of a frame dict, key -> [blocks, bytes, stranding ones, bytes]
    for end, seg_free in zip(ends, frees):
        last = entry = None
        for block in framed[start:end]:
            frames = block["frames"]
            site = frames[0]
            if not own[site["filename"]]:
                site = _own_frame(frames, own, skips)
            if site is not last:  # consecutive blocks of one line (a loop) skip the lookup
                last, entry = site, by_frame.get(id(site))
                if entry is None:
                    entry = by_frame[id(site)] = by_key.setdefault(_site_key(site), [0, 0, 0, 0])
            size = block["size"]
            entry[0] += 1
            entry[1] += size
            if seg_free:
                entry[2] += 1
                entry[3] += size
        start = end
    framed_bytes = 0
    for key, (count, size, strand_count, strand_size) in by_key.items():
        sites.by_site[key] = [count, size]
        if strand_count:
            stranding.by_site[key] = [strand_count, strand_size]
        framed_bytes += size
    return sites, stranding, framed_bytes


def _own_frame(frames, own, skips):
    """The first frame of the job's own code in a stack whose innermost frame is not (else the
    innermost). ``skips`` keeps, by the innermost frame's id, the runs of frames before the first
    own one in earlier stacks (the whole stack when it had none), the longest first, a few each:
    a stack that starts with one is settled by one list comparison, at C speed (it tries identity
    first, and PyTorch shares frame dicts between stacks; equal frames have equal file names)."""
    known, start = skips.get(id(frames[0])), 0
    for skipped in known or ():
        k = len(skipped)
        if frames[:k] == skipped:
            if k == len(frames):
                return frames[0]
            if own[frames[k]["filename"]]:
                return frames[k]
            start = k + 1  # a longer run of frames not the job's: look on from there
            break
    for k in range(start, len(frames)):
        if own[frames[k]["filename"]]:
            frame = frames[k]
            break
    else:
        k, frame = len(frames), frames[0]
    if known is None and len(skips) < _MAX_SKIPS:  # bounded: unshared frames are all new
        known = skips[id(frames[0])] = []
    if known is not None and len(known) < 4:
        known.append(frames[:k])
        known.sort(key=len, reverse=True)
    return frame


def _map_torch(probe, torch, budget, snapshot=None):
    """The PyTorch part of a map: of ``snapshot`` when the job's main thread took it (allocation
    history is recorded), else of a ``_snapshot()`` taken here."""
    cuda = sys.modules.get("torch.cuda")
    memory = sys.modules.get("torch.cuda.memory")
    if not _ready(cuda) or not cuda.is_initialized():
        return []
    if snapshot is None:
        if not _ready(memory) or _attr(memory, "_snapshot") is None:
            raise LookupError("torch.cuda.memory._snapshot not found")
        snapshot = memory._snapshot()
    by_device = {}
    for seg in snapshot.get("segments") or ():
        by_device.setdefault(_num(seg.get("device")) or 0, []).append(seg)
    dirs = [os.path.dirname(_attr(torch, "__file__") or "")]
    recording = probe.recording_on()
    devices = []
    for index in sorted(by_device):
        dev = _map_device(index, _torch_uuid(probe, cuda, index))
        dev.update(_summarise_torch(by_device[index], budget // len(by_device), dirs, recording))
        devices.append(dev)
    return devices


# A protocol buffer reader, enough for pprof's Profile (google/pprof, proto/profile.proto).

def _varint(data, pos):
    shift = result = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _fields(data):
    """(field number, wire type, value) of one message: ints for varints, bytes otherwise."""
    pos, end = 0, len(data)
    while pos < end:
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > end:
                raise ValueError("field runs past the message")
            value, pos = data[pos:pos + size], pos + size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, pos = int.from_bytes(data[pos:pos + size], "little"), pos + size
        else:
            raise ValueError("unsupported wire type %d" % wire)
        yield number, wire, value


def _ints(wire, value):
    """A repeated integer field's values, packed or not."""
    if wire == 0:
        return [value]
    out, pos = [], 0
    while pos < len(value):
        v, pos = _varint(value, pos)
        out.append(v)
    return out


def _pprof_samples(blob):
    """[(device label or None, count, bytes, frames innermost first)] of a (gzipped) pprof."""
    if blob[:2] == b"\x1f\x8b":
        import gzip
        blob = gzip.decompress(blob)
    types, samples, locations, functions, strings = [], [], {}, {}, []
    for number, wire, value in _fields(memoryview(blob).tobytes()):
        if number == 1 and wire == 2:
            types.append(dict((n, v) for n, w, v in _fields(value) if w == 0))
        elif number == 2 and wire == 2:
            samples.append(value)
        elif number == 4 and wire == 2:
            loc_id, lines = 0, []
            for n, w, v in _fields(value):
                if n == 1 and w == 0:
                    loc_id = v
                elif n == 4 and w == 2:
                    line = dict((ln, lv) for ln, lw, lv in _fields(v) if lw == 0)
                    lines.append((line.get(1, 0), line.get(2, 0)))
            locations[loc_id] = lines
        elif number == 5 and wire == 2:
            fn = dict((n, v) for n, w, v in _fields(value) if w == 0)
            functions[fn.get(1, 0)] = (fn.get(2, 0), fn.get(4, 0))
        elif number == 6 and wire == 2:
            strings.append(value.decode("utf-8", "replace"))

    def text(i):
        return strings[i] if 0 <= i < len(strings) else ""

    names = [text(t.get(1, 0)) for t in types]
    space = names.index("space") if "space" in names else len(names) - 1
    count = names.index("allocations") if "allocations" in names else None
    out = []
    for raw in samples:
        loc_ids, values, device = [], [], None
        for n, w, v in _fields(raw):
            if n == 1:
                loc_ids += _ints(w, v)
            elif n == 2:
                values += _ints(w, v)
            elif n == 3 and w == 2:
                label = dict((ln, lv) for ln, lw, lv in _fields(v) if lw == 0)
                if text(label.get(1, 0)) == "device":
                    device = text(label.get(2, 0))
        values = [v - (1 << 64) if v >= 1 << 63 else v for v in values]
        size = values[space] if 0 <= space < len(values) else 0
        blocks = values[count] if count is not None and count < len(values) else 1
        frames = []
        for loc in loc_ids:
            for fn_id, line in locations.get(loc, ()):
                name, filename = functions.get(fn_id, (0, 0))
                frames.append({"filename": text(filename), "line": line, "name": text(name)})
        out.append((device, blocks, size, frames))
    return out


def _label_index(label):
    """The device number at the end of a pprof device label ("cuda:0", "CudaDevice(id=1)")."""
    digits = ""
    for ch in reversed((label or "").rstrip(")")):
        if not ch.isdigit():
            break
        digits = ch + digits
    return int(digits) if digits else None


def _jax_shapes(jax, by_index):
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
            for device in array.devices():
                index = _num(getattr(device, "local_hardware_id", None))
                index = _num(device.id) if index is None else index
                entry = groups.setdefault(index, {}).setdefault(key, [0, 0])
                entry[0] += 1
                entry[1] += size
        except Exception:
            continue
    for index, found in groups.items():
        if index in by_index:
            ranked = sorted(found.items(), key=lambda kv: (-kv[1][1], kv[0]))[:20]
            by_index[index]["shapes"] = [{"shape": s, "dtype": t, "count": c, "bytes": b}
                                         for (s, t), (c, b) in ranked]


def _map_jax(probe, jax, budget):
    figures = _read_jax(probe, jax)
    devices, by_index = [], {}
    for fig in figures:
        dev = _map_device(fig["index"], fig["uuid"])
        dev.update(allocated=fig["allocated"], reserved=fig["reserved"],
                   free=fig["cached_free"], largest_free=fig["largest_free_block"],
                   segments_reason="JAX's allocator gives no block map",
                   sites_reason="jax.profiler is not loaded")
        devices.append(dev)
        by_index[fig["index"]] = dev
    if not devices:
        return devices
    profiler = _jax_profiler()
    if profiler is not None:
        try:
            _jax_sites(jax, profiler, by_index)
        except Exception as exc:
            for dev in devices:
                dev["sites_reason"] = "device_memory_profile: " + _reason(exc)
    if _attr(jax, "live_arrays") is not None:
        try:
            _jax_shapes(jax, by_index)
        except Exception:
            pass
    return devices


def _jax_sites(jax, profiler, by_index):
    dirs = [os.path.dirname(_attr(m, "__file__") or "")
            for m in (jax, sys.modules.get("jaxlib")) if m is not None]
    _profile_sites(profiler.device_memory_profile(_jax_gpu_backend()), by_index, dirs)


def _profile_sites(profile, by_index, framework_dirs):
    """Fills ``sites`` and ``unattributed`` of the map's devices (by index) from a pprof device
    memory profile. Samples of no bytes (compiled executables) are left out."""
    per_device = {}
    for label, blocks, size, frames in _pprof_samples(profile):
        index = _label_index(label)
        if index not in by_index and len(by_index) == 1:
            index = next(iter(by_index))
        if index not in by_index or size <= 0:
            continue
        if frames:
            sites = per_device.setdefault(index, _Sites(framework_dirs))
            sites.add(sites.site(frames), blocks, size)
        else:
            bare = by_index[index]["unattributed"] or {"blocks": 0, "bytes": 0}
            bare["blocks"] += blocks
            bare["bytes"] += size
            by_index[index]["unattributed"] = bare
    for index, dev in by_index.items():
        dev["sites"] = per_device[index].top(20) if index in per_device else []
        dev["sites_reason"] = None


def _map_cupy(probe, cupy, budget):
    devices = []
    for fig in _read_cupy(probe, cupy):
        cupy.cuda.runtime.setDevice(fig["index"])  # this thread only; the context exists
        dev = _map_device(fig["index"], fig["uuid"])
        dev.update(allocated=fig["allocated"], reserved=fig["reserved"], free=fig["cached_free"],
                   segments_reason="CuPy's memory pool gives no block map",
                   sites_reason="CuPy records no allocation sites",
                   free_blocks=_num(cupy.get_default_memory_pool().n_free_blocks()))
        devices.append(dev)
    return devices


def _map_tensorflow(probe, tf, budget):
    devices = []
    for fig in _read_tensorflow(probe, tf):
        dev = _map_device(fig["index"], None)
        dev.update(allocated=fig["allocated"],
                   segments_reason="TensorFlow gives no block map (current and peak bytes only)",
                   sites_reason="TensorFlow records no allocation sites")
        devices.append(dev)
    return devices


_MAPPERS = (("pytorch", "torch", _map_torch), ("jax", "jax", _map_jax),
            ("cupy", "cupy", _map_cupy), ("tensorflow", "tensorflow", _map_tensorflow))


# ---- Requests from gpumon (<pid>.request, gpumon.request/1), recording, the OOM observer ----

_REQUEST_MAX = 128
_VERBS = ("map", "record-on", "record-off", "export")
_MAP_GAP = 5.0  # seconds between maps asked for
_MAP_GAP_MAX = 300.0
_MAP_SLOW = 0.250
_OOM_GAP = 1.0  # seconds between maps at OOMs (a job that catches OOMs in a loop)
_EAGER_S = 5.0  # with recording asked for, how long from the start to look for torch every 10 ms
_oom_observer_pid = None  # the process in which the OOM observer is attached


def _record_entries():
    try:
        n = int(os.environ.get("GPUMON_PROBE_RECORD_ENTRIES", "100000"))
    except ValueError:
        n = 100000
    return min(max(n, 1000), 1000000)


def _parse_request(data):
    """(verb, id or None, why refused or None) of a request file's bytes."""
    words = data.decode("ascii", "replace").strip().split(" ")
    raw_id = words[2] if len(words) == 3 else ""
    ident = int(raw_id) if raw_id.isdigit() and raw_id.isascii() and len(raw_id) <= 20 else None
    if ident is not None and ident >= 1 << 64:
        ident = None
    verb = words[1] if len(words) == 3 and words[1].isprintable() else "?"
    if len(words) != 3 or words[0] != "gpumon.request/1":
        return verb[:32], ident, "not a gpumon.request/1 line"
    if verb not in _VERBS:
        return verb[:32], ident, "unknown verb"
    if ident is None:
        return verb, None, "bad id"
    return verb, ident, None


def _read_request(dfd, pid):
    """Takes ``<pid>.request`` if there is one: (verb, id, why refused or None), or None."""
    name = "%d.request" % pid
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(name, flags, dir_fd=dfd)
    except FileNotFoundError:
        return None
    except OSError:  # a symbolic link (ELOOP) or unreadable: its id cannot be read
        _unlink(dfd, name)
        return None
    try:
        st = os.fstat(fd)
        data = os.read(fd, _REQUEST_MAX + 1) if _is_regular(st.st_mode) else b""
    finally:
        os.close(fd)
    _unlink(dfd, name)
    verb, ident, why = _parse_request(data[:_REQUEST_MAX])
    if not _is_regular(st.st_mode):
        why = "not a regular file"
    elif st.st_uid != os.geteuid():
        why = "owned by uid %d, not by this process's user" % st.st_uid
    elif st.st_mode & 0o077:
        why = "readable or writable by others (mode %o)" % (st.st_mode & 0o777)
    elif st.st_size > _REQUEST_MAX or len(data) > _REQUEST_MAX:
        why = "larger than %d bytes" % _REQUEST_MAX
    return verb, ident, why


def _is_regular(mode):
    return mode & 0o170000 == 0o100000


def _unlink(dfd, name):
    try:
        os.unlink(name, dir_fd=dfd)
    except OSError:
        pass


# While PyTorch records allocation history, a snapshot taken from the probe's thread while the
# job allocated crashed jobs on an H100 (torch 2.11, segmentation fault); PyTorch expects
# snapshots from the main thread (pytorch/pytorch#153839). Then the job's main thread takes the
# snapshot, at its next bytecode boundary (Py_AddPendingCall), and the probe's thread summarises
# or pickles it. How many intervals a request waits for that, within 2..50 s (gpumon waits 60 s):
_JOB_WAIT_TICKS = 20
_job_call = None  # the C callback of _in_job_thread, made once and kept alive


def _history_on(probe):
    """Whether PyTorch records allocation history in this process (the job's own recording
    too); unknown on a torch without the query: then whether the probe started it. Never asked
    before the process has initialised CUDA: the query then crashed the job on an H100 (torch
    2.11, segmentation fault; the allocator does not exist yet), and recording (the job's own
    too) initialises CUDA first."""
    cuda = sys.modules.get("torch.cuda")
    query = _attr(_attr(sys.modules.get("torch"), "_C"), "_cuda_isHistoryEnabled")
    if query is None or not _ready(cuda) or not cuda.is_initialized():
        return probe.recording_on()
    return bool(query())


def _job_wait_s(probe):
    return min(max(_JOB_WAIT_TICKS * probe.interval_ms / 1000.0, 2.0), 50.0)


def _queue_in_job_thread():
    """Asks the job's main thread to run _in_job_thread at its next check: False when Python's
    queue of pending calls is full. ctypes is loaded already: torch imports it."""
    global _job_call
    import ctypes
    if _job_call is None:
        _job_call = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(_in_job_thread)
    return ctypes.pythonapi.Py_AddPendingCall(_job_call, None) == 0


def _in_job_thread(_arg):
    """Runs in the job's main thread between two bytecodes: takes the snapshot a queued request
    waits for. Returns 0 always (anything else, or an exception escaping, would reach the job)."""
    try:
        probe = _probe
        if probe is not None and os.getpid() == probe.pid:
            probe.take_queued()
    except BaseException:
        pass
    return 0


def _torch_memory():
    cuda, memory = sys.modules.get("torch.cuda"), sys.modules.get("torch.cuda.memory")
    return (cuda, memory) if _ready(cuda) and _ready(memory) else (None, None)


def _start_recording(probe):
    """Starts PyTorch's allocation history now (CUDA is initialised): None, or why not."""
    cuda, memory = _torch_memory()
    if memory is None or _attr(memory, "_record_memory_history") is None:
        return "torch.cuda.memory._record_memory_history not found"
    memory._record_memory_history("all", max_entries=probe.record_entries, stacks="python")
    import time
    probe.record_since = time.time_ns() // 1000000
    return None


def _on_cuda_init():
    """Queued with torch.cuda._lazy_call: runs once the process has initialised CUDA (inside
    torch's _lazy_init, in the job's thread, or at once when CUDA was already initialised).
    Attaches the OOM observer and starts recording when asked. Never raises: an exception here
    would fail the job's CUDA initialisation."""
    global _oom_observer_pid
    try:
        probe = _probe
        if probe is None or os.getpid() != probe.pid:
            return
        torch_c = _attr(sys.modules.get("torch"), "_C")
        attach = getattr(torch_c, "_cuda_attach_out_of_memory_observer", None)
        if attach is not None and _oom_observer_pid != probe.pid:
            attach(_on_oom)
            _oom_observer_pid = probe.pid
        if probe.record_wanted and probe.record_since is None:
            probe.record_reason = _start_recording(probe)
    except BaseException as exc:
        try:
            _probe.record_reason = _reason(exc)
        except BaseException:
            pass


def _on_oom(device, alloc, device_allocated, device_free):
    """PyTorch's OOM observer: called once per failing request, before the exception reaches
    the job. Writes the map with reason ``oom``; never raises, prints nothing."""
    try:
        probe = _probe
        if probe is not None and os.getpid() == probe.pid:
            probe.oom_map({"device": _num(device), "request": _num(alloc),
                           "device_allocated": _num(device_allocated),
                           "device_free": _num(device_free)})
    except BaseException:
        pass


def _arm_torch(probe):
    """Once torch.cuda is loaded (torch imports it early, and goes on importing for a while):
    queue _on_cuda_init for when the process initialises CUDA (never initialising it here;
    torch.cuda._lazy_call runs it at once when CUDA is initialised already)."""
    if probe.armed:
        return
    cuda = sys.modules.get("torch.cuda")
    if not _ready(cuda):
        return
    probe.armed = True
    try:
        lazy = _attr(cuda, "_lazy_call")
        if lazy is None:
            raise LookupError("torch.cuda._lazy_call not found")
        lazy(_on_cuda_init)
    except BaseException as exc:
        probe.record_reason = _reason(exc)


def _export_torch(snapshot=None):
    """PyTorch's snapshot pickled, as _dump_snapshot writes it: of ``snapshot`` when the job's
    main thread took it, else of one taken here; None before the process uses CUDA."""
    cuda, memory = _torch_memory()
    if cuda is None or not cuda.is_initialized():
        return None
    import pickle
    return "pickle", pickle.dumps(memory._snapshot() if snapshot is None else snapshot)


def _jax_profiler():
    """jax.profiler, or jax._src.profiler where device_memory_profile is defined (JAX imports
    that one itself); never imported here."""
    for name in ("jax.profiler", "jax._src.profiler"):
        module = sys.modules.get(name)
        if _ready(module) and _attr(module, "device_memory_profile") is not None:
            return module
    return None


def _jax_gpu_backend():
    """The name of JAX's initialised GPU backend, or None."""
    bridge = sys.modules.get("jax._src.xla_bridge")
    backends = _attr(bridge, "_backends") if _ready(bridge) else None
    names = [n for n in ("cuda", "rocm", "gpu") if isinstance(backends, dict) and n in backends]
    return names[0] if names else None


def _export_jax():
    backend, profiler = _jax_gpu_backend(), _jax_profiler()
    if backend is None or profiler is None:
        return None
    return "pb.gz", bytes(profiler.device_memory_profile(backend))




def _make_dirs(path):
    parent = os.path.dirname(path.rstrip("/"))
    if parent and parent != path and not os.path.isdir(parent):
        _make_dirs(parent)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        return
    os.chmod(path, 0o700)  # created here, so ours: the umask decides nothing


class _Probe:
    def __init__(self, directory, interval_ms, forked_cuda):
        import threading
        self.dir, self.interval_ms, self.forked_cuda = directory, interval_ms, forked_cuda
        self.pid, self.start_time, self.stopped, self.failures = os.getpid(), None, None, 0
        self.driver, self.uuids, self.snap = None, {}, {}
        self.snap_next, self.snap_period = 0.0, 10.0
        self.answer, self.map_at_ms, self.map_next, self.map_gap = None, None, 0.0, _MAP_GAP
        self.oom_next, self.armed = 0.0, False
        self.record_wanted = os.environ.get("GPUMON_PROBE_RECORD") == "1"
        self.record_entries, self.record_since, self.record_reason = _record_entries(), None, None
        self.map_lock, self.queue_lock = threading.Lock(), threading.Lock()
        # a request waiting for the job's main thread: (verb, id, since); then what it took:
        # (verb, id, at_ms, seconds, snapshot); and whether a pending call is queued
        self.queued, self.taken, self.call_queued = None, None, False
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, name=_NAME, daemon=True)

    def run(self):
        import time
        try:
            self.start_time = _start_time()
            due, eager_until = 0.0, time.monotonic() + (_EAGER_S if self.record_wanted else 0.0)
            while not self.stop.is_set() and not sys.is_finalizing():
                _arm_torch(self)
                if time.monotonic() >= due:
                    if not self.tick():
                        break
                    due = time.monotonic() + self.interval_ms / 1000.0
                now = time.monotonic()
                wait = due - now
                if not self.armed and ("torch" in sys.modules or now < eager_until):
                    wait = min(wait, 0.01)  # torch is (or may soon be) imported: queue early
                self.stop.wait(max(wait, 0.0))
        except BaseException:
            pass

    def tick(self):
        """Writes the file once; False once the probe has given up."""
        try:
            dfd = self.open_dir()
            try:
                try:
                    self.serve(dfd)
                except Exception:
                    pass  # a request that could not be read is not a failure to write
                self.write_file("%d.json" % self.pid, _json(self.document(True)), dfd)
            finally:
                os.close(dfd)
            self.failures = 0
            return True
        except BaseException as exc:
            self.failures += 1
            if self.failures < _MAX_FAILURES:
                return True
            self.stopped = "gave up after %d failures in a row: %s" % (self.failures, _reason(exc))
        try:
            self.write_file("%d.json" % self.pid, _json(self.document(False)))
        except BaseException:
            pass
        return False

    def document(self, with_frameworks):
        import time
        at_ms = time.time_ns() // 1000000
        frameworks = self.frameworks(_READERS) if with_frameworks else []
        return {"schema": "gpumon.probe/1", "pid": self.pid, "start_time": self.start_time,
                "at_ms": at_ms, "interval_ms": self.interval_ms,
                "python": sys.version.split()[0], "stopped": self.stopped,
                "frameworks": frameworks, "answer": self.answer,
                "recording": self.recording(), "map_at_ms": self.map_at_ms}

    def frameworks(self, readers, *args):
        frameworks = []
        for name, module_name, reader in readers:
            module = sys.modules.get(module_name)
            if not _ready(module):
                continue
            entry = {"name": name, "version": None, "error": None, "devices": []}
            version = _attr(module, "__version__")
            entry["version"] = version if isinstance(version, str) else None
            try:
                entry["devices"] = reader(self, module, *args)
            except BaseException as exc:
                entry["error"] = _reason(exc)
            frameworks.append(entry)
        return frameworks

    # -- recording allocation history (PyTorch) --

    def recording_on(self):
        return self.record_since is not None

    def recording(self):
        if not _ready(sys.modules.get("torch")):
            return None
        reason = self.record_reason
        if reason is None and self.record_since is None:
            reason = ("starts when the process initialises CUDA" if self.record_wanted
                      else "not asked for")
        return {"on": self.record_since is not None, "max_entries": self.record_entries,
                "stacks": "python", "since_ms": self.record_since, "reason": reason}

    def record(self, on):
        """The verbs record-on and record-off: (ok, detail)."""
        cuda, memory = _torch_memory()
        if cuda is None:
            if _ready(sys.modules.get("jax")):
                return False, "JAX needs no recording: its device memory profile has tracebacks"
            return False, "PyTorch is not loaded in this process"
        initialised = cuda.is_initialized()
        history = getattr(_attr(sys.modules.get("torch"), "_C"), "_cuda_isHistoryEnabled", None)
        by_job = (initialised and self.record_since is None and history is not None
                  and history() is True)
        if on:
            if by_job:
                return False, "the job records its allocation history itself"
            self.record_wanted, self.record_reason = True, None
            if self.record_since is not None:
                return True, "recording already"
            if not initialised:
                _arm_torch(self)
                return True, "starts when the process initialises CUDA"
            self.record_reason = _start_recording(self)
            return self.record_reason is None, self.record_reason or "recording"
        self.record_wanted = False
        if self.record_since is None:
            return (False, "the job records its allocation history itself") if by_job else (
                True, "not recording")
        memory._record_memory_history(None)
        self.record_since, self.record_reason = None, "stopped when asked"
        return True, "stopped"

    # -- requests --

    def serve(self, dfd):
        """Takes ``<pid>.request`` if there is one (one failed openat when there is none) and
        answers it in ``answer``."""
        try:
            if self.serve_queued():
                return  # one answer a tick: a new request waits in its file for the next
        except BaseException:
            self.queued = self.taken = None
        taken = _read_request(dfd, self.pid)
        if taken is None:
            return
        verb, ident, why = taken
        if ident is None:
            return  # an id that cannot be read: ignored
        ok, detail = False, why
        if why is None:
            try:
                done = self.run_verb(verb, ident)
                if done is None:
                    return  # queued for the job's main thread: answered once it has run
                ok, detail = done
            except BaseException as exc:
                ok, detail = False, _reason(exc)
        self.set_answer(verb, ident, ok, detail)

    def set_answer(self, verb, ident, ok, detail):
        if ident is not None:
            self.answer = {"id": ident, "verb": verb, "ok": ok,
                           "detail": (str(detail).splitlines() or [""])[0][:300]}

    def run_verb(self, verb, ident):
        import time
        if verb in ("record-on", "record-off"):
            return self.record(verb == "record-on")
        now = time.monotonic()
        if now < self.map_next:
            return False, "rate limited"
        if "torch" in sys.modules and _history_on(self):
            return self.queue(verb, ident, now)
        if verb == "map":
            self.map_next = now + self.map_gap
            why = self.take_map("request", ident, None)
            return why is None, why or "%d.map.json" % self.pid
        for export in (_export_torch, _export_jax):
            found = export()
            if found is not None:
                self.map_next = now + self.map_gap
                name = "%d.export.%d.%s" % (self.pid, ident, found[0])
                self.write_file(name, found[1])
                return True, name
        return False, ("nothing to export: PyTorch and JAX export once they use a GPU; "
                       "CuPy and TensorFlow have no export format")

    # -- snapshots taken in the job's main thread (allocation history recorded) --

    def queue(self, verb, ident, now):
        """Queues a map or export for the job's main thread: None (answered later), or the
        answer when it cannot be queued."""
        with self.queue_lock:
            if self.queued is not None or self.taken is not None:
                return False, "the previous request still waits for the job's main thread"
            if not self.call_queued:
                if not _queue_in_job_thread():
                    return False, "Python's queue of pending calls is full"
                self.call_queued = True
            self.queued, self.map_next = (verb, ident, now), now + self.map_gap
        return None

    def take_queued(self):
        """In the job's main thread: takes the snapshot the queued request waits for."""
        import time
        with self.queue_lock:
            self.call_queued = False
            queued, self.queued = self.queued, None
        if queued is None:
            return  # given up on, or none
        memory = sys.modules.get("torch.cuda.memory")
        at_ms, began = time.time_ns() // 1000000, time.perf_counter()
        try:
            snapshot = memory._snapshot()
        except BaseException as exc:
            snapshot = exc
        with self.queue_lock:
            self.taken = (queued[0], queued[1], at_ms, time.perf_counter() - began, snapshot)

    def serve_queued(self):
        """In the probe's thread: answers a request whose snapshot the job's main thread took,
        or gives it up when that thread has run no Python for the allowed time. True when it
        answered."""
        import time
        with self.queue_lock:
            taken, self.taken = self.taken, None
            queued, wait = self.queued, _job_wait_s(self)
            if taken is None and queued is not None and time.monotonic() - queued[2] > wait:
                self.queued = None
            else:
                queued = None
        if queued is not None:
            self.set_answer(queued[0], queued[1], False,
                            "allocation history is recorded, so the snapshot is taken in the "
                            "job's main thread, which ran no Python for %d s (waiting in CUDA "
                            "or C code); no snapshot is taken from another thread" % wait)
            return True
        if taken is None:
            return False
        verb, ident, at_ms, seconds, snapshot = taken
        if isinstance(snapshot, BaseException):
            self.set_answer(verb, ident, False, _reason(snapshot))
        elif verb == "map":
            why = self.take_map("request", ident, None, given=(at_ms, seconds, snapshot))
            self.set_answer(verb, ident, why is None, why or "%d.map.json" % self.pid)
        else:
            found = _export_torch(snapshot)
            if found is None:
                self.set_answer(verb, ident, False, "PyTorch has not initialised CUDA")
            else:
                name = "%d.export.%d.%s" % (self.pid, ident, found[0])
                self.write_file(name, found[1])
                self.set_answer(verb, ident, True, name)
        return True

    # -- maps --

    def take_map(self, reason, request_id, oom, mappers=_MAPPERS, given=None):
        """Writes ``<pid>.map.json``: None, or why not. Slow maps widen the gap between maps.
        ``given``: (at_ms, seconds, snapshot) of a PyTorch snapshot the job's main thread took,
        mapped instead of one taken here (its seconds count in took_us)."""
        import time
        if not self.map_lock.acquire(timeout=2.0):
            return "another map is being written"
        try:
            began, at_ms = time.perf_counter(), time.time_ns() // 1000000
            if given is not None:
                at_ms, began = given[0], began - given[1]
                mappers = tuple((n, m, (lambda p, t, b: _map_torch(p, t, b, given[2]))
                                 if n == "pytorch" else f) for n, m, f in mappers)
            for budget in (_MAX_RUNS, 0):  # with no runs left, only names can still be too long
                doc = {"schema": "gpumon.map/1", "pid": self.pid, "start_time": self.start_time,
                       "at_ms": at_ms, "reason": reason, "request_id": request_id,
                       "took_us": 0, "oom": oom, "frameworks": self.frameworks(mappers, budget)}
                doc["took_us"] = int((time.perf_counter() - began) * 1e6)
                data = _encode(doc).encode("utf-8", "replace")
                if len(data) <= _MAX_MAP_BYTES:
                    self.write_file("%d.map.json" % self.pid, data)
                    self.map_at_ms = at_ms
                    break
            if time.perf_counter() - began > _MAP_SLOW:
                self.map_gap = min(self.map_gap * 2, _MAP_GAP_MAX)
            return None if len(data) <= _MAX_MAP_BYTES else "the map exceeds 1 MiB"
        finally:
            self.map_lock.release()

    def oom_map(self, oom):
        import time
        now = time.monotonic()
        if now < self.oom_next:
            return
        self.oom_next = now + _OOM_GAP
        # PyTorch only: this runs in the job's thread, where CuPy's reader would switch devices
        self.take_map("oom", None, oom, _MAPPERS[:1])

    # -- files --

    def open_dir(self):
        """A descriptor of the probe directory, refused when it is a link or another user's."""
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            dfd = os.open(self.dir, flags)
        except FileNotFoundError:
            _make_dirs(self.dir)
            dfd = os.open(self.dir, flags)
        owner = os.fstat(dfd).st_uid
        if owner != os.geteuid():
            os.close(dfd)
            raise PermissionError("probe directory belongs to uid %d, not to this user" % owner)
        return dfd

    def write_file(self, final, data, dfd=None):
        """Atomically: ``.<final>.tmp`` (O_EXCL|O_NOFOLLOW, 0600), then renamed onto ``final``,
        through ``dfd`` or a descriptor of the probe directory opened for it."""
        if isinstance(data, str):
            data = data.encode("utf-8", "replace")
        own_dfd = dfd is None
        dfd = self.open_dir() if own_dfd else dfd
        tmp = "." + final + ".tmp"
        try:
            try:
                os.unlink(tmp, dir_fd=dfd)  # left by a write that was cut off
            except FileNotFoundError:
                pass
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o600, dir_fd=dfd)
            try:
                try:
                    os.fchmod(fd, 0o600)
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view):]
                finally:
                    os.close(fd)
                os.replace(tmp, final, src_dir_fd=dfd, dst_dir_fd=dfd)
            except BaseException:
                try:
                    os.unlink(tmp, dir_fd=dfd)
                except OSError:
                    pass
                raise
        finally:
            if own_dfd:
                os.close(dfd)



def _interval_ms():
    try:
        ms = int(os.environ.get("GPUMON_PROBE_INTERVAL_MS", "1000"))
    except ValueError:
        ms = 1000
    return min(max(ms, 100), 60000)


def _start(forked_cuda):
    """Starts the probe thread unless disabled or already running; True when started."""
    global _probe
    directory = os.environ.get("GPUMON_PROBE_DIR", "")
    if not directory or os.environ.get("GPUMON_PROBE_DISABLE") == "1":
        return False
    import threading
    if any(t.name == _NAME and t.is_alive() for t in threading.enumerate()):
        return False  # this file was imported a second time
    probe = _Probe(directory, _interval_ms(), forked_cuda)
    probe.thread.start()
    _probe = probe
    return True


def _halt(until_gone=False):
    """Stops the thread, waiting at most 0.5 s for a write under way; with until_gone, also until
    the kernel has let the thread go (the fork warning counts threads in /proc), at most 0.1 s."""
    import time
    probe = _probe
    if probe is not None:
        probe.stop.set()
        probe.thread.join(0.5)
        task = "/proc/self/task/%s" % probe.thread.native_id
        deadline = time.monotonic() + 0.1
        while until_gone and os.path.exists(task) and time.monotonic() < deadline:
            time.sleep(0.0002)


def _before_fork():
    global _fork_cuda, _fork_site
    try:
        probe = _probe
        if probe is not None:
            _fork_cuda = probe.forked_cuda or _cuda_initialised(probe)
            if sys.version_info >= (3, 13):
                caller = sys._getframe(1)
                _fork_site = (caller, caller.f_lasti)
            _halt(until_gone=True)
    except BaseException:
        pass


def _after_fork_in_parent():
    try:
        probe = _probe
        if probe is None or probe.stopped is not None:
            return  # none, or it gave up
        if probe.thread.is_alive():
            probe.stop.clear()  # it did not stop in time: let it go on
        elif sys.version_info >= (3, 13):
            _restart_later()
        else:
            _start(probe.forked_cuda)
    except BaseException:
        pass


def _restart_later():
    """Python 3.13+ counts the process's threads after the after-fork handlers have run, so a
    thread started in one draws the fork warning. Restart from a pending call instead, which the
    main thread runs at its next check; while that check still falls inside os.fork() (another
    after-fork handler, the warning code), the call puts itself back, up to a bound."""
    global _pending, _pending_left
    import ctypes
    if _pending is None:
        _pending = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(_restart_pending)
    _pending_left = 100000
    ctypes.pythonapi.Py_AddPendingCall(_pending, None)


def _inside_fork():
    """Whether the frame that called os.fork() is still waiting in that call."""
    frame, lasti = _fork_site or (None, None)
    try:
        f = sys._getframe(2)
    except ValueError:
        return False
    while f is not None and f is not frame:
        f = f.f_back
    return f is not None and f.f_lasti == lasti


def _restart_pending(_arg):
    global _fork_site, _pending_left
    try:
        if _fork_site is not None and _pending_left > 0 and _inside_fork():
            _pending_left -= 1
            sys.modules["ctypes"].pythonapi.Py_AddPendingCall(_pending, None)
            return 0
        _fork_site = None
        probe = _probe
        if probe is not None and probe.stopped is None and not probe.thread.is_alive():
            _start(probe.forked_cuda)
    except BaseException:
        pass
    return 0


def _after_fork_in_child():
    global _probe
    try:
        parent, _probe = _probe, None
        if parent is not None and parent.stopped is None:
            _start(_fork_cuda)
    except BaseException:
        pass


def _at_exit():
    try:
        _halt()
    except BaseException:
        pass


def _start_quietly():
    try:
        if _start(False):
            import atexit
            os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                                after_in_child=_after_fork_in_child)
            atexit.register(_at_exit)
    except BaseException:
        pass


def _main():
    spec = _find_shadowed()
    failure = None
    if spec is not None:
        try:
            _run_shadowed(spec)
        except BaseException as exc:
            failure = exc
    _start_quietly()
    if failure is not None:
        raise failure
    if spec is None:
        raise ModuleNotFoundError("No module named 'sitecustomize'", name="sitecustomize")


if __name__ == "sitecustomize":
    _main()
