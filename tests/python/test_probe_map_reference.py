"""The probe's map summary of 50,000-block pools equals a straightforward computation of the same
figures (block by block, docs/memory-map-format.md), so the summary's speed work cannot change
a figure; and its JSON is byte for byte what the plain encoder writes."""
import os
import sys
import unittest

import synthetic_pool
from probe_harness import load_probe

probe = load_probe()
MiB = 1 << 20
BIG = 64 * MiB
UPPERS = (MiB, 8 * MiB, 64 * MiB, 512 * MiB, None)
DIRS = [synthetic_pool.TORCH_DIR]


def own(filename):
    skip = [d + os.sep for d in DIRS] + [os.path.dirname(os.__file__) + os.sep]
    return not (filename.startswith("<frozen") or any(filename.startswith(d) for d in skip)
                or "/site-packages/" in filename or "/dist-packages/" in filename)


def reference(segments, budget, recording):
    """The map's figures of one device, computed the plain way."""
    segments = sorted(segments, key=lambda s: s["address"])
    entries, frees, allocs = [], [], []
    holes = [[upper, 0, 0] for upper in UPPERS]
    sites, stranding, bare = {}, {}, [0, 0]
    for seg in segments:
        runs = []
        for b in seg["blocks"]:
            state = {"active_allocated": "a", "inactive": "f"}.get(b["state"], "p")
            last = runs[-1] if runs else None
            if last and last[0] == state and b["size"] < BIG and last[3] < BIG:
                last[1:] = [last[1] + 1, last[2] + b["size"], max(last[3], b["size"])]
            else:
                runs.append([state, 1, b["size"], b["size"]])
        free = sum(b["size"] for b in seg["blocks"] if b["state"] == "inactive")
        for b in seg["blocks"]:
            if b["state"] == "inactive":
                bucket = next(h for h in holes if h[0] is None or b["size"] < h[0])
                bucket[1:] = [bucket[1] + 1, bucket[2] + b["size"]]
            elif b["state"] == "active_allocated" and not b["frames"]:
                bare = [bare[0] + 1, bare[1] + b["size"]]
            elif b["state"] == "active_allocated":
                frame = next((f for f in b["frames"] if own(f["filename"])), b["frames"][0])
                key = (frame["filename"][:256], frame["line"], frame["name"][:128])
                for table in (sites, stranding) if free else (sites,):
                    table[key] = [a + n for a, n in zip(table.get(key, [0, 0]), [1, b["size"]])]
        entries.append({"address": seg["address"], "size": seg["total_size"],
                        "kind": "small" if seg["segment_type"] == "small" else "large",
                        "expandable": seg["is_expandable"],
                        "private": tuple(seg["segment_pool_id"]) != (0, 0),
                        "stream": seg["stream"], "runs": runs})
        frees.append(free)
        allocs.append(sum(b["size"] for b in seg["blocks"] if b["state"] == "active_allocated"))
    kept, elided = bound(entries, frees, allocs, budget)
    framed = bool(sites)
    return {"allocated": sum(allocs), "reserved": sum(e["size"] for e in entries),
            "free": sum(frees), "largest_free": max([h for h in all_free(segments)] or [0]),
            "holes": holes, "segments": kept, "segments_total": len(entries), "elided": elided,
            "unattributed": {"blocks": bare[0], "bytes": bare[1]},
            "sites": top(sites, 20) if framed or recording else None,
            "sites_reason": None if framed or recording else
            "allocation history is not being recorded",
            "stranding_sites": top(stranding, 5) if framed or recording else None}


def all_free(segments):
    return [b["size"] for s in segments for b in s["blocks"] if b["state"] == "inactive"]


def bound(entries, frees, allocs, budget):
    """Up to ``budget`` runs: the segments with the most free bytes and the largest, taken in
    turn; one longer than half the budget is cut to what is left; the rest summed."""
    if sum(len(e["runs"]) for e in entries) <= budget:
        return entries, None
    order = sorted(range(len(entries)), key=lambda i: -frees[i])
    largest = sorted(range(len(entries)), key=lambda i: -entries[i]["size"])
    turns = [i for pair in zip(order, largest) for i in pair]
    chosen, left = [], budget
    for i in turns:
        if left <= 0:
            break
        runs = entries[i]["runs"]
        if i in chosen:
            continue
        if len(runs) <= left:
            chosen.append(i)
            left -= len(runs)
        elif len(runs) > budget // 2:
            tail = runs[left:]
            entries[i]["runs"] = runs[:left]
            entries[i]["truncated"] = {
                "runs": len(tail), "allocated": sum(r[2] for r in tail if r[0] == "a"),
                "free": sum(r[2] for r in tail if r[0] == "f"), "bytes": sum(r[2] for r in tail)}
            chosen.append(i)
            left = 0
    rest = [i for i in range(len(entries)) if i not in chosen]
    elided = {"segments": len(rest), "allocated": sum(allocs[i] for i in rest),
              "free": sum(frees[i] for i in rest), "bytes": sum(entries[i]["size"] for i in rest)}
    return [e for i, e in enumerate(entries) if i in chosen], elided


def top(table, n):
    ranked = sorted(table.items(), key=lambda kv: (-kv[1][1], kv[0]))[:n]
    return [{"file": f, "line": line, "function": fn, "blocks": b, "bytes": s}
            for (f, line, fn), (b, s) in ranked]


def plain_json(value):
    """The map's encoding: JSON with ", " and ": ", control characters, quote and backslash
    escaped, nothing else."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, str):
        out = "".join("\\u%04x" % ord(c) if ord(c) < 32 else "\\" + c if c in '"\\' else c
                      for c in value)
        return '"' + out + '"'
    if isinstance(value, dict):
        return "{" + ", ".join(plain_json(k) + ": " + plain_json(v)
                               for k, v in value.items()) + "}"
    return "[" + ", ".join(plain_json(v) for v in value) + "]"


def unshared(segments):
    """The same pool with every frame a copy of its own (no dict shared between stacks)."""
    for seg in segments:
        for b in seg["blocks"]:
            b["frames"] = [dict(f) for f in b["frames"]]
    return segments


class FiftyThousandBlocks(unittest.TestCase):
    def check(self, segments, budget=2048, recording=False):
        blocks = sum(len(s["blocks"]) for s in segments)
        dev = probe.torch_map.summarise(segments, budget, DIRS, recording)
        expected = reference(segments, budget, recording)
        self.assertEqual(dev, expected)
        self.assertEqual(list(dev), list(expected))  # key order, as the file has it
        self.assertEqual(probe.files.encode(dev), plain_json(expected))
        return blocks, dev

    def test_small_tensors_every_third_freed_without_frames(self):
        blocks, dev = self.check(synthetic_pool.small_tensors())
        self.assertGreater(blocks, 50000)
        self.assertIsNotNone(dev["elided"])  # over the 2048 runs: most segments summed
        self.assertEqual(dev["unattributed"]["bytes"], dev["allocated"])

    def test_with_frames_of_the_jobs_line_and_of_deep_module_stacks(self):
        for frames in ("job", "deep"):
            for recording in (False, True):
                _, dev = self.check(synthetic_pool.small_tensors(frames=frames),
                                    recording=recording)
                self.assertEqual(dev["unattributed"], {"blocks": 0, "bytes": 0})
        files = {s["file"] for s in dev["sites"]}
        self.assertEqual(files, {synthetic_pool.JOB, synthetic_pool.TORCH_DIR
                                 + "/nn/modules/module.py"})  # a stack with no frame of the job
        self.assertEqual(len(dev["sites"]), 20)

    def test_frames_copied_not_shared(self):
        self.check(unshared(synthetic_pool.small_tensors(frames="deep")), recording=True)

    def test_other_budgets_large_blocks_and_a_pool_without_holes(self):
        segments = synthetic_pool.small_tensors(frames="deep")
        for n in range(30):  # large segments whose like blocks of 64 MiB and more do not merge
            sizes = [MiB] * (n % 5) + [BIG, BIG, 3 * BIG, MiB][n % 3:] + [2 * MiB]
            states = ["active_allocated"] * (len(sizes) - 1) + ["inactive"]
            blocks = [{"address": 0, "size": s, "requested_size": s, "state": st, "frames": []}
                      for s, st in zip(sizes, states)]
            segments.append(dict(segments[0], address=(1 << 45) + n * (1 << 30), blocks=blocks,
                                 total_size=sum(sizes), segment_type="large"))
        runs = sum(len(s["runs"]) for s in reference(segments, 10 ** 9, True)["segments"])
        for budget in (0, 7, 300, 2048, 2100, runs - 1, runs):
            self.check(segments, budget=budget, recording=True)
        self.check(synthetic_pool.small_tensors(freed_every=10 ** 9))

    def test_one_expandable_segment_holding_the_whole_pool_is_cut(self):
        blocks = [b for s in synthetic_pool.small_tensors(frames="job") for b in s["blocks"]]
        sizes = [b["size"] for b in blocks]
        tail = ((MiB, "active_allocated"), (BIG, "active_allocated"), (BIG, "active_allocated"),
                (MiB, "active_allocated"), (600 * MiB, "inactive"), (BIG, "inactive"),
                (MiB, "active_pending_free"))
        blocks += [{"address": 0, "size": s, "requested_size": s, "state": st, "frames": []}
                   for s, st in tail]
        seg = dict(synthetic_pool.small_tensors(tensors=1)[0], blocks=blocks, is_expandable=True,
                   segment_type="large", total_size=sum(sizes) + sum(s for s, _ in tail))
        _, dev = self.check([seg], recording=True)
        self.assertEqual(len(dev["segments"][0]["runs"]), 2048)
        self.assertIn("truncated", dev["segments"][0])


class Encoding(unittest.TestCase):
    DOC = {"file": "/home/u/\x1b[2J\x07\"x\\.py\n\t\u2028é", "n": [0, -1, 10 ** 20, True, None],
           "t": (1, "a"), "e": {}, "l": []}

    def test_the_json_module_and_the_probes_encoder_write_the_same_bytes(self):
        saved = sys.modules.get("json")
        try:
            for json_module in (saved, None, "absent"):
                if json_module == "absent":
                    sys.modules.pop("json", None)
                else:
                    sys.modules["json"] = json_module
                for doc in (self.DOC, {"plain": ["é", 1]}, []):
                    self.assertEqual(probe.files.encode(doc), plain_json(doc))
                    self.assertEqual(probe.files.to_json(doc), plain_json(doc))
        finally:
            sys.modules["json"] = saved


if __name__ == "__main__":
    unittest.main()
