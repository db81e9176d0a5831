"""gpumon's requests (``<pid>.request``, ``gpumon.request/1 VERB ID``; docs/memory-map-format.md):
the file taken only when it is a regular file of this process's effective user, mode & 0o077 == 0
and at most 128 bytes, removed whatever it holds; one of five fixed verbs run (``map``,
``record-on``, ``record-off``, ``export``, ``where``), nothing taken from the file but its id;
the answer goes into the next ``<pid>.json`` (``where``: the main thread's place, too).

While PyTorch records allocation history, a snapshot taken from the probe's thread while the
job allocated crashed jobs on an H100 (torch 2.11, segmentation fault); PyTorch expects
snapshots from the main thread (pytorch/pytorch#153839). Then the job's main thread takes the
snapshot, at its next bytecode boundary (``Py_AddPendingCall``), and the probe's thread maps or
pickles it at its next tick; a main thread that runs no Python for 20 intervals (2..50 s) gets
nothing taken, and the request is answered with that reason."""

import os
import sys
import time

from . import common
from .common import part, reason
from .files import unlink

_REQUEST_MAX = 128
_VERBS = ("map", "record-on", "record-off", "export", "where")
_JOB_WAIT_TICKS = 20
_job_call = None  # the C callback of _in_job_thread, made once and kept alive


def parse_request(data):
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


def _read_request(dfd, pid, fd):
    """Takes ``<pid>.request`` (opened as ``fd``): (verb, id, why refused or None)."""
    name = "%d.request" % pid
    try:
        st = os.fstat(fd)
        data = os.read(fd, _REQUEST_MAX + 1) if _is_regular(st.st_mode) else b""
    finally:
        os.close(fd)
    unlink(dfd, name)
    verb, ident, why = parse_request(data[:_REQUEST_MAX])
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


def serve(probe, dfd, opened):
    """Answers a request whose snapshot the job's main thread took (or gave up on), else takes
    the request the tick opened (``opened``: its descriptor, the OSError opening it gave, or
    None when there is none) and answers it."""
    try:
        if _serve_queued(probe):
            if isinstance(opened, int):
                os.close(opened)  # one answer a tick: the new request waits in its file
            return
    except BaseException:
        probe.queued = probe.taken = None
    if opened is None:
        return
    if isinstance(opened, OSError):  # a symbolic link (ELOOP) or unreadable: no id to answer
        unlink(dfd, "%d.request" % probe.pid)
        return
    verb, ident, why = _read_request(dfd, probe.pid, opened)
    if ident is None:
        return  # an id that cannot be read: ignored
    ok, detail = False, why
    if why is None:
        try:
            done = _run_verb(probe, verb, ident)
            if done is None:
                return  # queued for the job's main thread: answered once it has run
            ok, detail = done
        except BaseException as exc:
            ok, detail = False, reason(exc)
    _set_answer(probe, verb, ident, ok, detail)


def _set_answer(probe, verb, ident, ok, detail):
    if ident is not None:
        probe.answer = {"id": ident, "verb": verb, "ok": ok,
                        "detail": (str(detail).splitlines() or [""])[0][:300]}


def _run_verb(probe, verb, ident):
    if verb == "where":
        probe.ask_where()
        return True, ""
    if verb in ("record-on", "record-off"):
        return part("torch_history").record(probe, verb == "record-on")
    now = time.monotonic()
    if now < probe.map_next:
        return False, "rate limited"
    if "torch" in sys.modules and part("torch_history").history_on(probe):
        return _queue(probe, verb, ident, now)
    if verb == "map":
        probe.map_next = now + probe.map_gap
        why = probe.take_map("request", ident, None)
        return why is None, why or "%d.map.json" % probe.pid
    for exporter in ("torch_history", "read_jax"):
        found = part(exporter).export()
        if found is not None:
            probe.map_next = now + probe.map_gap
            name = "%d.export.%d.%s" % (probe.pid, ident, found[0])
            probe.write_file(name, found[1])
            return True, name
    return False, ("nothing to export: PyTorch and JAX export once they use a GPU; "
                   "CuPy and TensorFlow have no export format")


# -- snapshots taken in the job's main thread (allocation history recorded) --

def _queue(probe, verb, ident, now):
    """Queues a map or export for the job's main thread: None (answered later), or the answer
    when it cannot be queued."""
    with probe.queue_lock:
        if probe.queued is not None or probe.taken is not None:
            return False, "the previous request still waits for the job's main thread"
        if not probe.call_queued:
            if not _queue_in_job_thread():
                return False, "Python's queue of pending calls is full"
            probe.call_queued = True
        probe.queued, probe.map_next = (verb, ident, now), now + probe.map_gap
    return None


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
        probe = common.current
        if probe is not None and os.getpid() == probe.pid:
            _take_queued(probe)
    except BaseException:
        pass
    return 0


def _take_queued(probe):
    """In the job's main thread: takes the snapshot the queued request waits for."""
    with probe.queue_lock:
        probe.call_queued = False
        queued, probe.queued = probe.queued, None
    if queued is None:
        return  # given up on, or none
    memory = sys.modules.get("torch.cuda.memory")
    at_ms, began = time.time_ns() // 1000000, time.perf_counter()
    try:
        snapshot = memory._snapshot()
    except BaseException as exc:
        snapshot = exc
    with probe.queue_lock:
        probe.taken = (queued[0], queued[1], at_ms, time.perf_counter() - began, snapshot)


def _serve_queued(probe):
    """In the probe's thread: answers a request whose snapshot the job's main thread took,
    or gives it up when that thread has run no Python for the allowed time. True when it
    answered."""
    with probe.queue_lock:
        taken, probe.taken = probe.taken, None
        queued = probe.queued
        wait = min(max(_JOB_WAIT_TICKS * probe.interval_ms / 1000.0, 2.0), 50.0)
        if taken is None and queued is not None and time.monotonic() - queued[2] > wait:
            probe.queued = None
        else:
            queued = None
    if queued is not None:
        _set_answer(probe, queued[0], queued[1], False,
                    "allocation history is recorded, so the snapshot is taken in the "
                    "job's main thread, which ran no Python for %d s (waiting in CUDA "
                    "or C code); no snapshot is taken from another thread" % wait)
        return True
    if taken is None:
        return False
    verb, ident, at_ms, seconds, snapshot = taken
    if isinstance(snapshot, BaseException):
        _set_answer(probe, verb, ident, False, reason(snapshot))
    elif verb == "map":
        why = probe.take_map("request", ident, None, given=(at_ms, seconds, snapshot))
        _set_answer(probe, verb, ident, why is None, why or "%d.map.json" % probe.pid)
    else:
        found = part("torch_history").export(snapshot)
        if found is None:
            _set_answer(probe, verb, ident, False, "PyTorch has not initialised CUDA")
        else:
            name = "%d.export.%d.%s" % (probe.pid, ident, found[0])
            probe.write_file(name, found[1])
            _set_answer(probe, verb, ident, True, name)
    return True
