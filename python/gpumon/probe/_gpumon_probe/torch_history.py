"""PyTorch's allocation history and OOM observer, started only once the process has initialised
CUDA itself: a call queued with ``torch.cuda._lazy_call`` (torch runs it inside ``_lazy_init``,
right after ``torch._C._cuda_init()``, in the job's thread) attaches the OOM observer, which
writes the map at a failing request, and starts recording when GPUMON_PROBE_RECORD=1; the verbs
``record-on``/``record-off``; and PyTorch's export (its snapshot pickled)."""

import os
import sys
import time

from . import common
from .common import attr, loaded, num, reason

_oom_observer_pid = None  # the process in which the OOM observer is attached


def torch_memory():
    """(torch.cuda, torch.cuda.memory) once both are loaded, else (None, None)."""
    cuda, memory = loaded("torch.cuda"), loaded("torch.cuda.memory")
    return (cuda, memory) if cuda is not None and memory is not None else (None, None)


def history_on(probe):
    """Whether PyTorch records allocation history in this process (the job's own recording
    too); unknown on a torch without the query: then whether the probe started it. Never asked
    before the process has initialised CUDA: the query then crashed the job on an H100 (torch
    2.11, segmentation fault; the allocator does not exist yet), and recording (the job's own
    too) initialises CUDA first."""
    cuda = loaded("torch.cuda")
    query = attr(attr(sys.modules.get("torch"), "_C"), "_cuda_isHistoryEnabled")
    if query is None or cuda is None or not cuda.is_initialized():
        return probe.recording_on()
    return bool(query())


def _start_recording(probe):
    """Starts PyTorch's allocation history now (CUDA is initialised): None, or why not."""
    cuda, memory = torch_memory()
    if memory is None or attr(memory, "_record_memory_history") is None:
        return "torch.cuda.memory._record_memory_history not found"
    memory._record_memory_history("all", max_entries=probe.record_entries, stacks="python")
    probe.record_since = time.time_ns() // 1000000
    return None


def _on_cuda_init():
    """Queued with torch.cuda._lazy_call: runs once the process has initialised CUDA (inside
    torch's _lazy_init, in the job's thread, or at once when CUDA was already initialised).
    Attaches the OOM observer and starts recording when asked. Never raises: an exception here
    would fail the job's CUDA initialisation."""
    global _oom_observer_pid
    try:
        probe = common.current
        if probe is None or os.getpid() != probe.pid:
            return
        torch_c = attr(sys.modules.get("torch"), "_C")
        attach = getattr(torch_c, "_cuda_attach_out_of_memory_observer", None)
        if attach is not None and _oom_observer_pid != probe.pid:
            attach(_on_oom)
            _oom_observer_pid = probe.pid
        if probe.record_wanted and probe.record_since is None:
            probe.record_reason = _start_recording(probe)
    except BaseException as exc:
        try:
            common.current.record_reason = reason(exc)
        except BaseException:
            pass


def _on_oom(device, alloc, device_allocated, device_free):
    """PyTorch's OOM observer: called once per failing request, before the exception reaches
    the job. Writes the map with reason ``oom``; never raises, prints nothing."""
    try:
        probe = common.current
        if probe is not None and os.getpid() == probe.pid:
            probe.oom_map({"device": num(device), "request": num(alloc),
                           "device_allocated": num(device_allocated),
                           "device_free": num(device_free)})
    except BaseException:
        pass


def arm(probe):
    """Once torch.cuda is loaded (torch imports it early, and goes on importing for a while):
    queue _on_cuda_init for when the process initialises CUDA (never initialising it here;
    torch.cuda._lazy_call runs it at once when CUDA is initialised already). The parts a map at
    an OOM needs are imported here, in the probe's thread, not in the job's at its failure."""
    if probe.armed:
        return
    cuda = loaded("torch.cuda")
    if cuda is None:
        return
    probe.armed = True
    try:
        from . import maps, torch_map  # noqa: F401
    except BaseException:
        pass  # then imported at the first map
    try:
        lazy = attr(cuda, "_lazy_call")
        if lazy is None:
            raise LookupError("torch.cuda._lazy_call not found")
        lazy(_on_cuda_init)
    except BaseException as exc:
        probe.record_reason = reason(exc)


def record(probe, on):
    """The verbs record-on and record-off: (ok, detail)."""
    cuda, memory = torch_memory()
    if cuda is None:
        if loaded("jax") is not None:
            return False, "JAX needs no recording: its device memory profile has tracebacks"
        return False, "PyTorch is not loaded in this process"
    initialised = cuda.is_initialized()
    history = getattr(attr(sys.modules.get("torch"), "_C"), "_cuda_isHistoryEnabled", None)
    by_job = (initialised and probe.record_since is None and history is not None
              and history() is True)
    if on:
        if by_job:
            return False, "the job records its allocation history itself"
        probe.record_wanted, probe.record_reason = True, None
        if probe.record_since is not None:
            return True, "recording already"
        if not initialised:
            arm(probe)
            return True, "starts when the process initialises CUDA"
        probe.record_reason = _start_recording(probe)
        return probe.record_reason is None, probe.record_reason or "recording"
    probe.record_wanted = False
    if probe.record_since is None:
        return (False, "the job records its allocation history itself") if by_job else (
            True, "not recording")
    memory._record_memory_history(None)
    probe.record_since, probe.record_reason = None, "stopped when asked"
    return True, "stopped"


def export(snapshot=None):
    """PyTorch's snapshot pickled, as _dump_snapshot writes it: of ``snapshot`` when the job's
    main thread took it, else of one taken here; None before the process uses CUDA."""
    cuda, memory = torch_memory()
    if cuda is None or not cuda.is_initialized():
        return None
    import pickle
    return "pickle", pickle.dumps(memory._snapshot() if snapshot is None else snapshot)
