"""Stand-in for torch.cuda; a test job sets its state through the names starting with an underscore."""
import types

_initialized = False
_stats = {}  # device index -> memory_stats() dict
_fail = None  # when set, memory_stats raises RuntimeError(_fail)
_fraction = {}
_snapshot = []
_snapshot_calls = 0
TOTAL = 80 * 2**30


def is_initialized():
    return _initialized


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
