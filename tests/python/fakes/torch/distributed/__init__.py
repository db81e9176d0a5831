"""Stand-in for torch.distributed: the default process group a job creates with
``init_process_group`` and ends with ``destroy_process_group``, and the calls the probe makes.

``reads`` counts the probe's reads of the group (``get_rank``): once a group, however many ticks.
Calling into the module while it is still being imported kills the process (the probe must skip
a module that is being imported); so does ``FAKE_DIST_GET_RANK=abort`` at ``get_rank()``.
``FAKE_DIST_RANK`` and ``FAKE_DIST_BACKEND=raise`` make the group lie or fail."""
import os
import time

_importing = True
reads = 0
_default = {"pg": None}


class ProcessGroup:
    def __init__(self, rank, size, backend):
        self.rank, self.size, self.backend = rank, size, backend


class Backend(str):
    """torch's Backend is a str subclass too."""


class _WorldMeta(type):
    @property
    def WORLD(cls):
        return _default["pg"]


class GroupMember(metaclass=_WorldMeta):
    NON_GROUP_MEMBER = -100


def _guard():
    if _importing:
        os.abort()


def is_initialized():
    _guard()
    return GroupMember.WORLD is not None


def init_process_group(backend="nccl", rank=0, world_size=1):
    _default["pg"] = ProcessGroup(rank, world_size, backend)


def destroy_process_group():
    _default["pg"] = None


def _group():
    _guard()
    if _default["pg"] is None:
        raise ValueError("Default process group has not been initialized, please make sure to "
                         "call init_process_group.")
    return _default["pg"]


def get_rank():
    global reads
    reads += 1
    if os.environ.get("FAKE_DIST_GET_RANK") == "abort":
        os.abort()
    rank = os.environ.get("FAKE_DIST_RANK")
    return int(rank) if rank is not None else _group().rank


def get_world_size():
    return _group().size


def get_backend():
    if os.environ.get("FAKE_DIST_BACKEND") == "raise":
        raise RuntimeError("Invalid process group specified")
    return Backend(_group().backend)


if os.environ.get("FAKE_DIST_IMPORT_DELAY"):  # the rest of a long import
    time.sleep(float(os.environ["FAKE_DIST_IMPORT_DELAY"]))
_importing = False
