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
