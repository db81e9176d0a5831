"""The probe's thread, "gpumon-probe": its state, its loop, and one tick, which reads the figures
of every framework the process has loaded (each framework's part imported only once that
framework is in ``sys.modules``) and its rank in a distributed job, looks for a request from
gpumon (one failed ``openat`` when there is none), and writes ``<pid>.json`` (``gpumon.probe/1``). After
5 failed ticks in a row it stops, writing the reason into ``stopped`` when it still can."""

import os
import sys
import threading
import time

from .common import MAP_GAP, NAME, attr, loaded, part, reason
from .files import open_dir, to_json, write_file

_MAX_FAILURES = 5
_EAGER_S = 5.0  # with recording asked for, how long from the start to look for torch every 10 ms
_REQUEST_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def _reader(name):
    def read(probe, module):
        return part(name).read(probe, module)
    return read


READERS = (("pytorch", "torch", _reader("read_torch")), ("jax", "jax", _reader("read_jax")),
           ("cupy", "cupy", _reader("read_cupy")),
           ("tensorflow", "tensorflow", _reader("read_tensorflow")))


def _record_entries():
    """GPUMON_PROBE_RECORD_ENTRIES, clamped to 1000..1000000; 100000 when not an integer."""
    try:
        n = int(os.environ.get("GPUMON_PROBE_RECORD_ENTRIES", "100000"))
    except ValueError:
        n = 100000
    return min(max(n, 1000), 1000000)


def start_time():
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


class Probe:
    def __init__(self, directory, interval_ms, forked_cuda, inherited_group=None):
        self.dir, self.interval_ms, self.forked_cuda = directory, interval_ms, forked_cuda
        self.pid, self.start_time, self.stopped, self.failures = os.getpid(), None, None, 0
        self.driver, self.uuids, self.snap = None, {}, {}
        self.snap_next, self.snap_period = 0.0, 10.0
        self.answer, self.map_at_ms, self.map_next, self.map_gap = None, None, 0.0, MAP_GAP
        self.oom_next, self.armed = 0.0, False
        self.record_wanted = os.environ.get("GPUMON_PROBE_RECORD") == "1"
        self.record_entries, self.record_since, self.record_reason = _record_entries(), None, None
        # the distributed group last read (its identity and what was read of it), and the
        # identity of the parent's group in a fork child (not this process's: never reported)
        self.group, self.group_doc, self.inherited_group = None, None, inherited_group
        self.map_lock, self.queue_lock = threading.Lock(), threading.Lock()
        # a request waiting for the job's main thread: (verb, id, since); then what it took:
        # (verb, id, at_ms, seconds, snapshot); and whether a pending call is queued
        self.queued, self.taken, self.call_queued = None, None, False
        # how the process ended (``ending``), the main thread's watch (``main_thread``), the
        # last document written (its figures go into the last file), one writer at a time
        self.end, self.watch, self.last_doc = None, None, None
        self.write_lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, name=NAME, daemon=True)

    def run(self):
        try:
            self.start_time = start_time()
            due, eager_until = 0.0, time.monotonic() + (_EAGER_S if self.record_wanted else 0.0)
            while not self.stop.is_set() and not sys.is_finalizing():
                if not self.armed and "torch.cuda" in sys.modules:
                    part("torch_history").arm(self)
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
            dfd = open_dir(self.dir)
            try:
                try:
                    self.serve(dfd)
                except Exception:
                    pass  # a request that could not be read is not a failure to write
                with self.write_lock:
                    write_file(self.dir, "%d.json" % self.pid, to_json(self.document(True)), dfd)
            finally:
                os.close(dfd)
            self.failures = 0
            return True
        except BaseException as exc:
            self.failures += 1
            if self.failures < _MAX_FAILURES:
                return True
            self.stopped = "gave up after %d failures in a row: %s" % (self.failures, reason(exc))
        try:
            write_file(self.dir, "%d.json" % self.pid, to_json(self.document(False)))
        except BaseException:
            pass
        return False

    def serve(self, dfd):
        """Hands ``<pid>.request`` to the request channel when there is one (one failed openat
        when there is none and no earlier request waits for the job's main thread)."""
        try:
            opened = os.open("%d.request" % self.pid, _REQUEST_FLAGS, dir_fd=dfd)
        except FileNotFoundError:
            if self.queued is None and self.taken is None:
                return
            opened = None
        except OSError as exc:  # a symbolic link (ELOOP) or unreadable
            opened = exc
        part("channel").serve(self, dfd, opened)

    def document(self, with_frameworks):
        at_ms = time.time_ns() // 1000000
        frameworks = self.frameworks(READERS) if with_frameworks else []
        doc = {"schema": "gpumon.probe/1", "pid": self.pid, "start_time": self.start_time,
               "at_ms": at_ms, "interval_ms": self.interval_ms,
               "python": sys.version.split()[0], "stopped": self.stopped,
               "frameworks": frameworks, "answer": self.answer,
               "recording": self.recording(), "map_at_ms": self.map_at_ms,
               "distributed": self.distributed() if with_frameworks else None,
               "end": self.end, "where": self.where(at_ms) if with_frameworks else None}
        if with_frameworks:
            self.last_doc = doc
        return doc

    # -- the main thread and the process's end --

    def where(self, at_ms):
        try:
            return part("main_thread").where(self, at_ms)
        except BaseException:
            return None

    def ask_where(self):
        """``where`` asked: the main thread's place goes into the next files (``main_thread``)."""
        main_thread = part("main_thread")
        if self.watch is None:
            self.watch = main_thread.Watch()
        self.watch.ask(time.time_ns() // 1000000)

    def write_last(self):
        """Writes the file with the end record (``ending``): the last tick's figures, no place
        of the main thread; waits at most 0.5 s for a tick's write under way."""
        if self.pid != os.getpid():
            return
        if self.start_time is None:
            self.start_time = start_time()
        locked = self.write_lock.acquire(timeout=0.5)
        try:
            doc = self.last_doc if self.last_doc is not None else self.document(False)
            doc = dict(doc, end=self.end, where=None, answer=self.answer, stopped=self.stopped)
            write_file(self.dir, "%d.json" % self.pid, to_json(doc))
        finally:
            if locked:
                self.write_lock.release()

    def frameworks(self, readers, *args):
        """One entry per framework of ``readers`` the process has loaded; ``readers``: (name,
        module name, function of (probe, module, *args) that gives its devices)."""
        frameworks = []
        for name, module_name, reader in readers:
            module = loaded(module_name)
            if module is None:
                continue
            entry = {"name": name, "version": None, "error": None, "devices": []}
            version = attr(module, "__version__")
            entry["version"] = version if isinstance(version, str) else None
            try:
                entry["devices"] = reader(self, module, *args)
            except BaseException as exc:
                entry["error"] = reason(exc)
            frameworks.append(entry)
        return frameworks

    def distributed(self):
        """The process's place in a distributed job, once it has joined one; else None."""
        if "torch.distributed" not in sys.modules and "jax._src.distributed" not in sys.modules:
            return None
        try:
            return part("distributed").read(self)
        except BaseException:
            return None

    # -- allocation history (PyTorch; torch_history does the work) --

    def recording_on(self):
        return self.record_since is not None

    def recording(self):
        if loaded("torch") is None:
            return None
        reason_ = self.record_reason
        if reason_ is None and self.record_since is None:
            reason_ = ("starts when the process initialises CUDA" if self.record_wanted
                       else "not asked for")
        return {"on": self.record_since is not None, "max_entries": self.record_entries,
                "stacks": "python", "since_ms": self.record_since, "reason": reason_}

    # -- maps and files --

    def take_map(self, why, request_id, oom, torch_only=False, given=None):
        """Writes ``<pid>.map.json``: None, or why not (``maps``)."""
        return part("maps").take_map(self, why, request_id, oom, torch_only, given)

    def oom_map(self, oom):
        """At a failing request, in the job's thread: the map with reason ``oom``."""
        part("maps").oom_map(self, oom)

    def write_file(self, final, data, dfd=None):
        write_file(self.dir, final, data, dfd)
