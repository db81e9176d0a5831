"""Helpers for test jobs: wait until the probe has written a tick that began after now."""
import json
import os
import time


def probe_file(pid=None):
    return os.path.join(os.environ["GPUMON_PROBE_DIR"], "%d.json" % (pid or os.getpid()))


def wait_tick(timeout=5.0):
    """The first probe document whose figures were read after this call began, or None."""
    since = time.time_ns() // 1000000
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(probe_file()) as f:
                doc = json.load(f)
            if doc["at_ms"] > since:
                return doc
        except (OSError, ValueError):
            pass
        time.sleep(0.02)
    return None


def request(line):
    """Writes ``<pid>.request`` the way gpumon does: one line, mode 0600, atomically."""
    directory = os.environ["GPUMON_PROBE_DIR"]
    os.makedirs(directory, 0o700, exist_ok=True)
    tmp = os.path.join(directory, ".request.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, line.encode() if isinstance(line, str) else line)
    os.close(fd)
    os.replace(tmp, os.path.join(directory, "%d.request" % os.getpid()))


def wait_answer(ident, timeout=5.0):
    """The probe document that answers request ``ident``, or None."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(probe_file()) as f:
                doc = json.load(f)
            if (doc.get("answer") or {}).get("id") == ident:
                return doc
        except (OSError, ValueError):
            pass
        time.sleep(0.02)
    return None


def read_map(pid=None):
    with open(os.path.join(os.environ["GPUMON_PROBE_DIR"], "%d.map.json" % (pid or os.getpid()))) as f:
        return json.load(f)
