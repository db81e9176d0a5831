"""Times the allocator probe's map summary (issue 26) on a synthetic PyTorch snapshot of about
50,000 blocks, with allocation frames on every allocated block as recording gives them.

Usage: python3 scripts/bench_map_summary.py [BLOCKS]   (standard library only, no GPU)
Reports the thread's CPU time (what the summary costs the job's thread) and the wall time."""
import importlib.util
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "gpumon_probe", os.path.join(HERE, "..", "python", "gpumon", "probe", "sitecustomize.py"))
probe = importlib.util.module_from_spec(spec)
spec.loader.exec_module(probe)


def synthetic(blocks, per_segment=25, shared=True):
    """Segments of 50 MiB-ish, blocks alternating allocated and freed (the fragmented case); with
    ``shared`` None no block has frames (no recording), "dicts" every block its own list of shared
    frame dicts (what torch's symbolizer returns), False its own copies (no sharing at all)."""
    torch_dir = "/usr/lib/python3/dist-packages/torch"
    stacks = [[{"filename": torch_dir + "/nn/modules/module.py", "line": 1750 + k, "name": "_call_impl"}
               for k in range(12)] + [{"filename": "/home/u/train.py", "line": 80 + s, "name": "step"},
                                      {"filename": "/home/u/train.py", "line": 200, "name": "main"}]
              for s in range(40)]
    segments, address = [], 1 << 40
    for n in range(blocks // per_segment):
        bl = []
        for k in range(per_segment):
            size = (2 << 20) + 512 * (k % 7)
            state = "active_allocated" if k % 2 == 0 else "inactive"
            bl.append({"address": address, "size": size, "requested_size": size, "state": state,
                       "frames": frames(stacks[(n + k) % 40], shared)
                       if state == "active_allocated" else []})
            address += size
        total = sum(b["size"] for b in bl)
        segments.append({"device": 0, "address": bl[0]["address"], "total_size": total,
                         "allocated_size": 0, "active_size": 0, "requested_size": 0,
                         "segment_type": "large", "stream": 0, "is_expandable": False,
                         "segment_pool_id": (0, 0), "frames": [], "blocks": bl})
    return segments


def frames(stack, shared):
    if shared is None:
        return []
    if shared == "dicts":
        return list(stack)  # as torch's symbolizer gives them: one list per stack, shared frames
    return stack if shared else [dict(f) for f in stack]


def main():
    blocks = int(sys.argv[1]) if len(sys.argv) > 1 else 50000
    for shared in (None, True, "dicts", False):
        measure(synthetic(blocks, shared=shared), shared)


def measure(segments, shared):
    runs, cpu = [], []
    for _ in range(5):
        c0, t0 = time.thread_time(), time.perf_counter()
        dev = probe._summarise_torch(segments, probe._MAX_RUNS,
                                     ["/usr/lib/python3/dist-packages/torch"], shared is not None)
        data = probe._json(dev).encode()
        runs.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.thread_time() - c0) * 1000)
    print("frames %s; " % {None: "none", True: "shared lists", "dicts": "own list, shared dicts",
                               False: "own copies"}[shared],
          end="")
    print("blocks %d, segments %d: summary + encoding %.1f ms of thread CPU (median of 5; "
          "wall %.1f ms); %d bytes, %d runs kept" % (
              sum(len(s["blocks"]) for s in segments), len(segments), sorted(cpu)[2],
              sorted(runs)[2], len(data), sum(len(s["runs"]) for s in dev["segments"])))


if __name__ == "__main__":
    main()
