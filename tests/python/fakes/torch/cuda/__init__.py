"""Stand-in for torch.cuda; a test job sets its state through the names starting with an underscore
(setting ``_initialized`` and ``_allocator_ready`` directly is CUDA initialised without running
the queued calls).

``_lazy_call`` and ``_lazy_init`` behave as torch's: calls queued before CUDA is initialised run
when the job initialises it, inside ``_lazy_init`` and before ``is_initialized()`` turns true; an
exception from one fails the initialisation (``DeferredCudaCallError``)."""
import types

_initialized = False
_allocator_ready = False  # torch._C._cuda_init() has run: the C++ allocator exists
_queued_calls = []
_stats = {}  # device index -> memory_stats() dict
_fail = None  # when set, memory_stats raises RuntimeError(_fail)
_fraction = {}
_snapshot = []  # the segments memory_snapshot() and memory._snapshot() return
_snapshot_calls = 0
TOTAL = 80 * 2**30


class DeferredCudaCallError(Exception):
    pass


class OutOfMemoryError(RuntimeError):
    pass


OutOfMemoryError.__module__ = "torch"  # torch names it so (torch._C's torch.OutOfMemoryError)


def is_initialized():
    return _initialized


def _lazy_call(callable, **kwargs):
    if is_initialized():
        callable()
    else:
        _queued_calls.append(callable)


def _lazy_init():
    """What the job's first CUDA call does."""
    global _initialized, _allocator_ready
    if _initialized:
        return
    _allocator_ready = True
    for queued in _queued_calls:
        try:
            queued()
        except Exception as e:
            raise DeferredCudaCallError("CUDA call failed lazily at initialization") from e
    _initialized = True


def _oom(device, request, device_allocated, device_free):
    """What the allocator does at a failing request: observers first, then the exception."""
    from torch import _C
    for fn in list(_C.observers):
        fn(device, request, device_allocated, device_free)
    raise OutOfMemoryError("CUDA out of memory. Tried to allocate %d bytes" % request)


def device_count():
    return 2


def memory_stats(device=None):
    if _fail:
        raise RuntimeError(_fail)
    return dict(_stats.get(device, {})) if _initialized else {}


def get_device_properties(device):
    return types.SimpleNamespace(uuid="fd6139b1-8d5e-4f1c-9d2a-00000000000%d" % device, total_memory=TOTAL)


def get_per_process_memory_fraction(device=None):
    return _fraction.get(device, 1.0)


def memory_snapshot():
    global _snapshot_calls
    _snapshot_calls += 1
    return _snapshot


from torch.cuda import memory  # noqa: E402,F401
