"""Starting the probe's thread (at most one per process) with the exception hook that records an
uncaught exception (``ending``); stopping it at exit (waiting at most 0.5 s for a write under
way, so no temp file is left) and writing the end record then; and around ``os.fork()``: stopped
just before (so Python 3.12+ does not warn about forking a multi-threaded process because of it)
and restarted after, in the child under the child's pid; on Python 3.13+ the parent's restart
waits for the main thread's next pending-call check (docs/probe-format.md, "Fork")."""

import os
import sys
import threading
import time

from . import common
from .common import NAME
from .probe import Probe

_fork_cuda = False  # whether the process forking had initialised CUDA
_fork_group = None  # the distributed group of the process forking (not its child's)
_pending = None  # the ctypes callback of _restart_later, kept alive
_pending_left = 0
_fork_site = None  # (frame, f_lasti) of the os.fork() call under way, on Python 3.13+


def _interval_ms():
    try:
        ms = int(os.environ.get("GPUMON_PROBE_INTERVAL_MS", "1000"))
    except ValueError:
        ms = 1000
    return min(max(ms, 100), 60000)


def _start(forked_cuda, inherited_group=None):
    """Starts the probe thread unless disabled or already running; True when started."""
    directory = os.environ.get("GPUMON_PROBE_DIR", "")
    if not directory or os.environ.get("GPUMON_PROBE_DISABLE") == "1":
        return False
    if any(t.name == NAME and t.is_alive() for t in threading.enumerate()):
        return False  # another copy of the hook started it already
    probe = Probe(directory, _interval_ms(), forked_cuda, inherited_group)
    probe.thread.start()
    common.current = probe
    return True


def _halt(until_gone=False):
    """Stops the thread, waiting at most 0.5 s for a write under way; with until_gone, also until
    the kernel has let the thread go (the fork warning counts threads in /proc), at most 0.1 s."""
    probe = common.current
    if probe is not None:
        probe.stop.set()
        probe.thread.join(0.5)
        task = "/proc/self/task/%s" % probe.thread.native_id
        deadline = time.monotonic() + 0.1
        while until_gone and os.path.exists(task) and time.monotonic() < deadline:
            time.sleep(0.0002)


def _before_fork():
    global _fork_cuda, _fork_group, _fork_site
    try:
        probe = common.current
        if probe is not None:
            _fork_cuda = probe.forked_cuda or (
                "ctypes" in sys.modules and common.part("driver").cuda_initialised(probe))
            _fork_group = None
            if "torch.distributed" in sys.modules or "jax._src.distributed" in sys.modules:
                found = common.part("distributed").group()
                _fork_group = found[1] if found is not None else None
            if sys.version_info >= (3, 13):
                caller = sys._getframe(1)
                _fork_site = (caller, caller.f_lasti)
            _halt(until_gone=True)
    except BaseException:
        pass


def _after_fork_in_parent():
    global _fork_group
    try:
        _fork_group = None
        probe = common.current
        if probe is None or probe.stopped is not None:
            return  # none, or it gave up
        if probe.thread.is_alive():
            probe.stop.clear()  # it did not stop in time: let it go on
        elif sys.version_info >= (3, 13):
            _restart_later()
        else:
            _start(probe.forked_cuda, probe.inherited_group)
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
        probe = common.current
        if probe is not None and probe.stopped is None and not probe.thread.is_alive():
            _start(probe.forked_cuda, probe.inherited_group)
    except BaseException:
        pass
    return 0


def _after_fork_in_child():
    global _fork_group
    try:
        parent, common.current = common.current, None
        inherited, _fork_group = _fork_group, None
        if parent is not None and parent.stopped is None:
            _start(_fork_cuda, inherited)
    except BaseException:
        pass


def _at_exit():
    try:
        _halt()
        probe = common.current
        if probe is not None:
            common.part("ending").at_exit(probe)
    except BaseException:
        pass


def start_quietly():
    """Starts the probe, and registers its fork and exit handlers once it runs, and the
    exception hook that records an uncaught exception (``ending``)."""
    try:
        if _start(False):
            import atexit
            os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                                after_in_child=_after_fork_in_child)
            atexit.register(_at_exit)
            common.part("ending").install()
    except BaseException:
        pass
