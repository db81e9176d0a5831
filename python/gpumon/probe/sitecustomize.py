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
   loaded and initialised.

Rules it keeps, since it runs inside other people's jobs:
- It never imports torch, jax, cupy or tensorflow (only ``sys.modules.get``), reads a framework
  only once that framework has initialised its device, and never creates a CUDA context: the
  CUDA driver is used only if the process has already loaded it (RTLD_NOLOAD), it is never
  initialised here, and a device is switched to only if its primary context is already active.
- It imports only the standard library: os and sys (always loaded), and once the probe starts
  threading and atexit (time, already loaded by threading); ctypes only once jax or cupy is
  loaded, and on Python 3.13+ at the first os.fork(). No json: a small encoder writes the file.
- Every exception is caught; it prints nothing, emits no warning, leaves signal handlers,
  sys.excepthook and the exit status alone. After 5 failed ticks in a row it stops, writing the
  reason into "stopped" when it still can.
- Files are written atomically: ``.<pid>.json.tmp`` (O_EXCL|O_NOFOLLOW, mode 0600) in the same
  directory, then os.replace. Missing probe directories are created 0700; a probe directory that
  is a symbolic link or belongs to another user is refused.
- Around os.fork() it stops its thread (so Python 3.12+ does not warn about forking a
  multi-threaded process because of it) and restarts it in the parent and in the child; the
  child writes under its own pid. At exit it waits at most 0.5 s for a write in progress.
- Bounded work per tick: one statistics call per framework device; torch's memory snapshot only
  when stranded bytes (under expandable segments, cached free bytes) are large, at most every
  10 s, and less often or never when it is slow.
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
    if large and now >= probe.snap_next:
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
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, name=_NAME, daemon=True)

    def run(self):
        try:
            self.start_time = _start_time()
            while not self.stop.is_set() and not sys.is_finalizing() and self.tick():
                self.stop.wait(self.interval_ms / 1000.0)
        except BaseException:
            pass

    def tick(self):
        """Writes the file once; False once the probe has given up."""
        try:
            self.write(self.document(True))
            self.failures = 0
            return True
        except BaseException as exc:
            self.failures += 1
            if self.failures < _MAX_FAILURES:
                return True
            self.stopped = "gave up after %d failures in a row: %s" % (self.failures, _reason(exc))
        try:
            self.write(self.document(False))
        except BaseException:
            pass
        return False

    def document(self, with_frameworks):
        import time
        at_ms = time.time_ns() // 1000000
        frameworks = []
        for name, module_name, reader in _READERS if with_frameworks else ():
            module = sys.modules.get(module_name)
            if not _ready(module):
                continue
            entry = {"name": name, "version": None, "error": None, "devices": []}
            version = _attr(module, "__version__")
            entry["version"] = version if isinstance(version, str) else None
            try:
                entry["devices"] = reader(self, module)
            except BaseException as exc:
                entry["error"] = _reason(exc)
            frameworks.append(entry)
        return {"schema": "gpumon.probe/1", "pid": self.pid, "start_time": self.start_time,
                "at_ms": at_ms, "interval_ms": self.interval_ms,
                "python": sys.version.split()[0], "stopped": self.stopped,
                "frameworks": frameworks}

    def write(self, doc):
        data = _json(doc).encode("utf-8", "replace")
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            dfd = os.open(self.dir, flags)
        except FileNotFoundError:
            _make_dirs(self.dir)
            dfd = os.open(self.dir, flags)
        tmp, final = ".%d.json.tmp" % self.pid, "%d.json" % self.pid
        try:
            owner = os.fstat(dfd).st_uid
            if owner != os.geteuid():
                raise PermissionError("probe directory belongs to uid %d, not to this user" % owner)
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
