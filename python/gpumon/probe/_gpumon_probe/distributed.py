"""Which rank of which distributed job this process is, as its framework says it (the
``distributed`` object of ``<pid>.json``; docs/probe-format.md), read without importing anything:

- PyTorch: ``torch.distributed`` from ``sys.modules`` once it has finished importing and
  ``is_initialized()`` (the default process group exists): ``get_rank()``, ``get_world_size()``,
  ``get_backend()``, and MASTER_ADDR, MASTER_PORT and TORCHELASTIC_RUN_ID as the process's
  ``os.environ`` has them now;
- JAX: ``jax._src.distributed.global_state`` once its ``client`` exists (``jax.distributed.
  initialize()`` has connected): the attributes ``process_id``, ``num_processes`` and
  ``coordinator_address`` only (never ``jax.process_index()``, which could initialise a backend).

It is read when the group appears and again only when it is another group (the default process
group or JAX's client is another object): a tick costs ``is_initialized()`` and a few attribute
reads. A fork child is not a member of its parent's group: the group it inherited is not
reported. A figure that cannot be had (or is out of range) is null."""

import os

from .common import attr, loaded, num

_MAX_TEXT = 256


def group():
    """(framework, the identity of the group now, where its figures are read) of the group this
    process is in, or None: torch's default process group (``GroupMember.WORLD``; the module
    itself where that is not there) and ``torch.distributed``, or JAX's distributed client and
    its ``global_state``. Identities only: no reference to the job's objects is kept past the
    read (a group the job destroys is freed in the job's thread, as without the probe)."""
    dist = loaded("torch.distributed")
    initialized = attr(dist, "is_initialized") if dist is not None else None
    if initialized is not None and initialized() is True:
        world = getattr(attr(dist, "GroupMember"), "WORLD", None)
        return "pytorch", id(dist if world is None else world), dist
    module = loaded("jax._src.distributed")
    state = attr(module, "global_state") if module is not None else None
    client = getattr(state, "client", None) if state is not None else None
    if client is not None:
        return "jax", id(client), state
    return None


def read(probe):
    """The ``distributed`` object, or None while the process is in no group of its own."""
    found = group()
    if found is None or found[1] == probe.inherited_group:
        probe.group = probe.group_doc = None
        return None
    framework, key, source = found
    if key != probe.group or probe.group_doc is None:
        probe.group_doc = _torch(source) if framework == "pytorch" else _jax(source)
        probe.group = key
    return probe.group_doc


def _torch(dist):
    env = os.environ
    addr, port = env.get("MASTER_ADDR"), env.get("MASTER_PORT")
    return {"framework": "pytorch", "backend": _text(_call(dist, "get_backend")),
            "rank": _count(_call(dist, "get_rank"), 0),
            "world_size": _count(_call(dist, "get_world_size"), 1),
            "master": _text("%s:%s" % (addr, port)) if addr and port else None,
            "run_id": _text(env.get("TORCHELASTIC_RUN_ID"))}


def _jax(state):
    return {"framework": "jax", "backend": None,
            "rank": _count(getattr(state, "process_id", None), 0),
            "world_size": _count(getattr(state, "num_processes", None), 1),
            "master": _text(getattr(state, "coordinator_address", None)), "run_id": None}


def _call(module, name):
    """``module.name()``, or None when it is not there or fails."""
    try:
        function = attr(module, name)
        return function() if function is not None else None
    except Exception:
        return None


def _count(value, least):
    """An integer from ``least`` to 2^32 - 1 (what gpumon reads as a rank or a size), else None."""
    value = num(value)
    return value if value is not None and least <= value < 1 << 32 else None


def _text(value):
    """A string, cut to 256 characters (a str subclass, as torch's Backend, made a plain str)."""
    return value[:_MAX_TEXT] if isinstance(value, str) and value else None
