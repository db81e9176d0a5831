"""Times the allocator probe's map summary and encoding (issue 26: a 50,000-block pool costs the
job at most 100 ms of one thread, _snapshot() included) on synthetic PyTorch snapshots shaped
like the one scripts/gpu/memory_map_check.py's cost_map job leaves on an H100: 50,000 tensors of
4-7 KiB in 2 MiB small-pool segments, every third freed (tests/python/synthetic_pool.py).

Usage: python3 scripts/bench_map_summary.py [--probe PATH] [--heap N]
  --probe  another hook to time: a hook directory (sitecustomize.py and its _gpumon_probe/), or an
           older single-file sitecustomize.py (e.g. from `git show`)
  --heap   keep N small objects alive first, as a job's heap (the garbage collector's full
           passes grow with it: the summary should not set them off)
Standard library only, no GPU. Reports the thread's CPU time (what the summary costs the job's
thread: median and max of 7), the wall time (median), and the garbage collector's passes the
summary set off (a full pass, over the whole heap, lands in the max)."""
import gc
import importlib
import importlib.util
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
import synthetic_pool  # noqa: E402

CASES = (("no frames (recording off)", None, False),
         ("frames: the job's line, 1 frame", "job", False),
         ("frames: model stacks, up to 14 frames, shared dicts", "deep", False),
         ("frames: model stacks, every frame a copy (worst case)", "deep", True))


class Summary:
    """The summary, its encoder and its run budget, of a hook directory or an older single file."""

    def __init__(self, path):
        sys.dont_write_bytecode = True  # no __pycache__ in the checkout
        if os.path.isdir(path):
            where = os.path.join(path, "_gpumon_probe")
            spec = importlib.util.spec_from_file_location(
                "_gpumon_probe", os.path.join(where, "__init__.py"),
                submodule_search_locations=[where])
            package = importlib.util.module_from_spec(spec)
            sys.modules["_gpumon_probe"] = package
            spec.loader.exec_module(package)
            parts = [importlib.import_module("_gpumon_probe." + n)
                     for n in ("torch_map", "files", "maps")]
            self.summarise, self.encode, self.max_runs = (
                parts[0].summarise, parts[1].encode, parts[2].MAX_RUNS)
        else:
            spec = importlib.util.spec_from_file_location("gpumon_probe", path)
            probe = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(probe)
            # older probes encode with _json only
            self.summarise, self.encode, self.max_runs = (
                probe._summarise_torch, getattr(probe, "_encode", probe._json), probe._MAX_RUNS)


def unshared(segments):
    for seg in segments:
        for b in seg["blocks"]:
            b["frames"] = [dict(f) for f in b["frames"]]
    return segments


def measure(probe, segments, recording):
    collections = []
    gc.callbacks.append(lambda phase, info: collections.append(info["generation"])
                        if phase == "start" else None)
    cpu, wall = [], []
    try:
        for _ in range(7):
            c0, t0 = time.thread_time(), time.perf_counter()
            dev = probe.summarise(segments, probe.max_runs, [synthetic_pool.TORCH_DIR],
                                  recording)
            data = probe.encode(dev).encode()
            wall.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.thread_time() - c0) * 1000)
    finally:
        gc.callbacks.pop()
    return sorted(cpu), sorted(wall)[3], len(data), list(collections)


def main():
    args = sys.argv[1:]
    path = os.path.join(HERE, "..", "python", "gpumon", "probe")
    heap = []
    while args:
        flag = args.pop(0)
        if flag == "--probe":
            path = args.pop(0)
        elif flag == "--heap":
            heap = [[i] for i in range(int(args.pop(0)))]
        else:
            sys.exit(__doc__)
    probe = Summary(path)
    gc.collect()
    print("probe %s, Python %s, %d objects kept alive"
          % (os.path.relpath(path), sys.version.split()[0], len(heap)))
    for label, frames, copies in CASES:
        segments = synthetic_pool.small_tensors(frames=frames)
        if copies:
            unshared(segments)
        cpu, wall, size, collections = measure(probe, segments, frames is not None)
        print("%-54s %d blocks, %d segments: %5.1f ms of thread CPU (max %5.1f; wall %5.1f ms)"
              ", %d bytes, GC passes %.0f a map (full: %d in 7)"
              % (label, sum(len(s["blocks"]) for s in segments), len(segments), cpu[3], cpu[-1],
                 wall, size, len(collections) / 7.0, collections.count(2)))


if __name__ == "__main__":
    main()
