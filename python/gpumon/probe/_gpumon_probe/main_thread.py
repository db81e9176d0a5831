"""Where the job's main thread stands (``where`` in ``<pid>.json``), read each tick from its own
frames (``sys._current_frames()``; nothing is run in the job): a key of its innermost 8 frames
(code and instruction), and the thread's CPU time. The thread has moved when the key changed or
it used at least a tenth of the time since the last tick on a CPU (a loop that happens to be at
the same place at every tick, a wait that spins); it stands still otherwise. Once it has stood
still for ``GPUMON_PROBE_STILL_S`` (default 10, clamped to 1..3600), or when gpumon asked
(``where``; the answer kept for 3 s and at least 2 ticks), its frames are reported."""

import os
import sys
import threading
import time

_MAX_FRAMES = 8
_MAX_FILE = 256
_MAX_FUNCTION = 128
_BUSY = 0.1  # a share of the time on a CPU that counts as moving
_ASKED_FOR_MS = 3000


def still_ms():
    """GPUMON_PROBE_STILL_S in ms, clamped to 1..3600 s; 10 s when not a number."""
    try:
        seconds = float(os.environ.get("GPUMON_PROBE_STILL_S", "10"))
    except ValueError:
        seconds = 10.0
    if seconds != seconds:
        seconds = 10.0
    return int(min(max(seconds, 1.0), 3600.0) * 1000)


def _printable(text, limit):
    text = text[:limit] if isinstance(text, str) else ""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)[:limit]


class Watch:
    """What the probe remembers of the main thread between ticks."""

    def __init__(self):
        self.threshold_ms = still_ms()
        self.ident = threading.main_thread().ident
        try:
            self.clock = time.pthread_getcpuclockid(self.ident)
        except Exception:
            self.clock = None
        self.key, self.since_ms, self.last_ms, self.cpu_ns = None, None, None, None
        self.asked_until_ms, self.asked_ticks = 0, 0

    def _frame(self):
        return sys._current_frames().get(self.ident)

    def _cpu(self):
        if self.clock is None:
            return None
        try:
            return time.clock_gettime_ns(self.clock)
        except Exception:
            self.clock = None
            return None

    def tick(self, now_ms):
        """Notes where the main thread is now; returns its frame (to read only if reported)."""
        frame = self._frame()
        key, f = [], frame
        while f is not None and len(key) < _MAX_FRAMES:
            key.append((id(f.f_code), f.f_lasti))
            f = f.f_back
        key = tuple(key)
        cpu = self._cpu()
        busy = False
        if cpu is not None and self.cpu_ns is not None and self.last_ms is not None:
            elapsed_ns = (now_ms - self.last_ms) * 1000000
            busy = elapsed_ns > 0 and cpu - self.cpu_ns >= _BUSY * elapsed_ns
        if key != self.key or busy or self.since_ms is None:
            self.key, self.since_ms = key, now_ms
        self.cpu_ns, self.last_ms = cpu, now_ms
        return frame

    def ask(self, now_ms):
        self.asked_until_ms, self.asked_ticks = now_ms + _ASKED_FOR_MS, 2

    def report(self, now_ms, frame):
        """The ``where`` entry of this tick, or None."""
        asked = now_ms < self.asked_until_ms or self.asked_ticks > 0
        self.asked_ticks = max(self.asked_ticks - 1, 0)
        still = self.since_ms is not None and now_ms - self.since_ms >= self.threshold_ms
        if frame is None or not (asked or still):
            return None
        frames, f = [], frame
        while f is not None and len(frames) < _MAX_FRAMES:
            code = f.f_code
            line = f.f_lineno
            frames.append({"file": _printable(code.co_filename, _MAX_FILE),
                           "line": line if isinstance(line, int) and line >= 0 else 0,
                           "function": _printable(code.co_name, _MAX_FUNCTION)})
            f = f.f_back
        return {"frames": frames, "since_ms": self.since_ms, "at_ms": now_ms, "asked": asked}


def where(probe, now_ms):
    """The tick's look at the main thread: the ``where`` entry, or None."""
    watch = probe.watch
    if watch is None:
        watch = probe.watch = Watch()
    frame = watch.tick(now_ms)
    try:
        return watch.report(now_ms, frame)
    finally:
        del frame
