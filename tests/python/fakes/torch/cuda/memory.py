"""Stand-in for torch.cuda.memory: ``_snapshot`` and ``_record_memory_history``.

``_record_memory_history`` called before CUDA is initialised is counted in ``early_calls``: the
real one would initialise CUDA then (torch::cuda::_record_memory_history calls lazyInitCUDA)."""
import sys

_history = None  # the last enabling call's arguments, None when not recording
history_calls = []
early_calls = 0
snapshot_calls = 0
snapshot_delay = 0.0  # seconds _snapshot() takes
snapshot_threads = []  # the name of the thread each _snapshot() call ran in


def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=sys.maxsize,
                           device=None):
    global _history, early_calls
    if not sys.modules["torch.cuda"]._allocator_ready:
        early_calls += 1
    history_calls.append([enabled, stacks, max_entries])
    _history = None if enabled is None else [enabled, stacks, max_entries]


def _snapshot(device=None):
    global snapshot_calls
    snapshot_calls += 1
    snapshot_threads.append(__import__("threading").current_thread().name)
    if snapshot_delay:
        __import__("time").sleep(snapshot_delay)
    cuda = sys.modules["torch.cuda"]
    return {"segments": cuda._snapshot,
            "device_traces": [[{"action": "alloc", "addr": 0, "size": 512, "stream": 0,
                                "time_us": 1, "frames": []}]] if _history else [[]],
            "allocator_settings": {"expandable_segments": False}}
