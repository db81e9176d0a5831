"""gpumon's allocator probe, inside a job: loaded by the start-up hook (``sitecustomize.py``
beside this directory) under this one private name, and only when the probe is to run.

Started, it runs one daemon thread, "gpumon-probe", which every GPUMON_PROBE_INTERVAL_MS
(default 1000, clamped to 100..60000) writes ``<GPUMON_PROBE_DIR>/<pid>.json`` in the format
``gpumon.probe/1`` (docs/probe-format.md): the memory-pool figures of the GPU frameworks this
process has loaded and initialised, and its rank when it has joined a distributed job. Each tick
it also looks for a request from gpumon (``<pid>.request``; docs/memory-map-format.md) and
answers in the next file: ``map`` writes ``<pid>.map.json``, ``record-on``/``record-off`` start
and stop PyTorch's allocation history, ``export`` writes the pool in the framework's own format,
``where`` writes where the main thread stands. Its last file says how the process ended.

The parts, each imported at its first use (only ``lifecycle``, ``probe``, ``files``,
``common`` and ``ending`` at start-up):

- ``lifecycle``: starting the thread, stopping it at exit, and around ``os.fork()``;
- ``ending``: how the process ended (an uncaught exception, through a chained
  ``sys.excepthook``; a normal shutdown, at ``atexit``), in its last file;
- ``main_thread``: where the main thread stands, once it has stood still a while or gpumon asks;
- ``probe``: the thread itself: its state, its loop, one tick, the figures document;
- ``files``: the JSON encoder and the atomic 0600 writer into the probe directory;
- ``common``: small helpers every part shares (reading modules without importing them);
- ``driver``: the CUDA driver API, reached only when the process has loaded it itself;
- ``read_torch``, ``read_jax``, ``read_cupy``, ``read_tensorflow``: one framework's figures
  (and, but PyTorch's, its part of a map);
- ``torch_history``: PyTorch's allocation history, OOM observer, and the snapshots the job's
  main thread takes while history is recorded;
- ``distributed``: which rank of which job, from torch.distributed or JAX's distributed state;
- ``maps``: taking and bounding a map (``gpumon.map/1``); ``torch_map``: PyTorch's pool summarised
  block by block; ``sites``: allocations by the line of the job's code that made them;
  ``pprof``: the protobuf reader for JAX's device memory profile;
- ``channel``: gpumon's requests: the file read and checked, the five verbs answered.

Rules every part keeps, since it runs inside other people's jobs:
- It never imports torch, jax, cupy or tensorflow (only ``sys.modules.get``), reads a framework
  only once that framework has initialised its device, and never creates a CUDA context.
- It imports only the standard library: os and sys (always loaded); once the probe starts
  threading and atexit (time, already loaded by threading); ctypes only once jax or cupy is
  loaded, on Python 3.13+ at the first os.fork(), and for a map or export while PyTorch
  records allocation history (torch has imported it by then); pickle only for a PyTorch export,
  gzip only for a JAX map. json is never imported.
- Every exception is caught; it prints nothing, emits no warning, leaves signal handlers and
  the exit status alone; its sys.excepthook calls the one it found first, exactly as before.
- Bounded work per tick; maps only when asked and at an OOM.
"""


def start():
    """Starts the probe (thread, fork handlers, exit handler) unless it runs already."""
    from . import lifecycle
    lifecycle.start_quietly()
