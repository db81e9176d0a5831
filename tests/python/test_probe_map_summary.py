"""The probe's map summary (gpumon.map/1) from PyTorch snapshot segments, the allocation-site
rule, the pprof reader and the request line parser, called directly (no job, no thread)."""
import gzip
import json
import os
import unittest

import pprof_encode
from probe_harness import load_probe

probe = load_probe()
MiB = 1 << 20
TORCH = "/venv/lib/python3.12/site-packages/torch"
STDLIB = os.path.dirname(os.__file__)


def block(state, size, frames=()):
    return {"address": 0, "size": size, "requested_size": size, "state": state,
            "frames": [{"filename": f, "line": n, "name": fn} for f, n, fn in frames]}


def segment(address, blocks, **extra):
    seg = {"device": 0, "address": address, "total_size": sum(b["size"] for b in blocks),
           "segment_type": "large", "stream": 0, "is_expandable": False,
           "segment_pool_id": (0, 0), "frames": [], "blocks": blocks}
    seg.update(extra)
    return seg


def summarise(segments, budget=2048, recording=True):
    return probe.torch_map.summarise(segments, budget, [TORCH], recording)


A, F, P = "active_allocated", "inactive", "active_pending_free"
USER = ("/home/u/train.py", 87, "collate")


class Summary(unittest.TestCase):
    def test_totals_are_exact_and_like_blocks_merge(self):
        segs = [
            segment(300 * MiB, [block(A, 2 * MiB), block(A, 2 * MiB), block(F, MiB),
                                block(F, 3 * MiB), block(P, MiB), block(A, 64 * MiB),
                                block(A, 64 * MiB), block(F, 512 * MiB)],
                    is_expandable=True),
            segment(100 * MiB, [block(A, 512), block(F, MiB - 512)], segment_type="small",
                    segment_pool_id=(1, 3), stream=7),
        ]
        dev = summarise(segs)
        self.assertEqual(dev["allocated"], 132 * MiB + 512)
        self.assertEqual(dev["free"], 517 * MiB - 512)
        self.assertEqual(dev["reserved"], 650 * MiB)
        self.assertEqual(dev["largest_free"], 512 * MiB)
        # a hole of exactly an upper bound goes to the next bucket
        self.assertEqual(dev["holes"], [[MiB, 1, MiB - 512], [8 * MiB, 2, 4 * MiB],
                                        [64 * MiB, 0, 0], [512 * MiB, 0, 0],
                                        [None, 1, 512 * MiB]])
        small, large = dev["segments"]  # address order
        self.assertEqual((small["kind"], small["private"], small["expandable"], small["stream"]),
                         ("small", True, False, 7))
        self.assertEqual((large["kind"], large["private"], large["expandable"]),
                         ("large", False, True))
        self.assertEqual(large["runs"], [["a", 2, 4 * MiB, 2 * MiB], ["f", 2, 4 * MiB, 3 * MiB],
                                         ["p", 1, MiB, MiB], ["a", 1, 64 * MiB, 64 * MiB],
                                         ["a", 1, 64 * MiB, 64 * MiB],
                                         ["f", 1, 512 * MiB, 512 * MiB]])
        self.assertEqual((dev["segments_total"], dev["elided"]), (2, None))
        for seg in dev["segments"]:
            self.assertEqual(sum(r[2] for r in seg["runs"]), seg["size"])

    def test_a_pool_over_the_run_budget_keeps_holes_and_large_segments_and_sums_the_rest(self):
        segs = [segment(n * 64 * MiB, [block(A, MiB), block(F, MiB), block(A, MiB)])
                for n in range(1000)]
        segs.append(segment(10 ** 6 * MiB, [block(A, MiB), block(F, 40 * MiB), block(A, MiB)]))
        segs.append(segment(2 * 10 ** 6 * MiB, [block(A, 300 * MiB), block(A, 300 * MiB)]))
        dev = summarise(segs, budget=300)
        kept = dev["segments"]
        self.assertLessEqual(sum(len(s["runs"]) for s in kept), 300)
        addresses = [s["address"] for s in kept]
        self.assertEqual(addresses, sorted(addresses))
        self.assertIn(10 ** 6 * MiB, addresses)  # the most free bytes
        self.assertIn(2 * 10 ** 6 * MiB, addresses)  # the largest
        elided = dev["elided"]
        self.assertEqual(elided["segments"] + len(kept), 1002)
        self.assertEqual(dev["segments_total"], 1002)
        runs = [r for s in kept for r in s["runs"]]
        self.assertEqual(sum(r[2] for r in runs if r[0] == "a") + elided["allocated"],
                         dev["allocated"])
        self.assertEqual(sum(r[2] for r in runs if r[0] == "f") + elided["free"], dev["free"])
        self.assertEqual(sum(s["size"] for s in kept) + elided["bytes"], dev["reserved"])
        self.assertEqual(dev["largest_free"], 40 * MiB)

    def test_one_segment_too_long_for_the_budget_is_cut_with_its_tail_summed(self):
        blocks = [block(A if k % 2 == 0 else F, MiB + k) for k in range(5000)]
        dev = summarise([segment(0, blocks, is_expandable=True)], budget=2048)
        (seg,) = dev["segments"]
        self.assertEqual(len(seg["runs"]), 2048)
        cut = seg["truncated"]
        self.assertEqual(cut["runs"], 5000 - 2048)
        self.assertEqual(sum(r[2] for r in seg["runs"]) + cut["bytes"], seg["size"])
        self.assertEqual(sum(r[2] for r in seg["runs"] if r[0] == "f") + cut["free"], dev["free"])
        self.assertEqual(dev["elided"], {"segments": 0, "allocated": 0, "free": 0, "bytes": 0})

    def test_with_no_run_left_every_segment_is_summed(self):
        segs = [segment(n * 64 * MiB, [block(A, MiB), block(F, 2 * MiB)]) for n in range(10)]
        dev = summarise(segs, budget=0)  # the second try of a map that would exceed 1 MiB
        self.assertEqual(dev["segments"], [])
        self.assertEqual(dev["elided"], {"segments": 10, "allocated": 10 * MiB,
                                         "free": 20 * MiB, "bytes": 30 * MiB})
        self.assertEqual((dev["free"], dev["largest_free"]), (20 * MiB, 2 * MiB))

    def test_fifty_thousand_blocks_write_well_under_a_mebibyte(self):
        frames = [(TORCH + "/nn/modules/module.py", 1750, "_call_impl"), USER]
        segs = [segment(n * 64 * MiB, [block(A if k % 2 == 0 else F, 2 * MiB + k, frames)
                                       for k in range(25)]) for n in range(2000)]
        dev = summarise(segs)
        data = probe.files.to_json(dev).encode()
        self.assertLess(len(data), 256 * 1024)
        self.assertLessEqual(sum(len(s["runs"]) for s in dev["segments"]), 2048)
        self.assertEqual(json.loads(data)["allocated"], dev["allocated"])


class Sites(unittest.TestCase):
    def test_the_first_frame_in_the_jobs_own_code_holds_the_block(self):
        library = [(TORCH + "/nn/modules/linear.py", 125, "forward"),
                   (STDLIB + "/contextlib.py", 81, "inner"),
                   ("/usr/lib/python3/dist-packages/numpy/core/x.py", 5, "f"),
                   ("/opt/env/lib/python3.12/site-packages/transformers/m.py", 9, "g"),
                   ("<frozen runpy>", 88, "_run_code")]
        segs = [segment(0, [block(A, 4 * MiB, library + [USER, ("/home/u/main.py", 3, "main")]),
                            block(A, 2 * MiB, library + [USER]),
                            block(A, 8 * MiB, [("/home/u/model.py", 12, "forward")]),
                            block(A, MiB, library),  # no own frame: the innermost
                            block(A, 512),  # allocated before recording started
                            block(F, 16 * MiB)]),
                segment(64 * MiB, [block(A, 32 * MiB, [("/home/u/cache.py", 40, "keep")])])]
        dev = summarise(segs)
        self.assertEqual(dev["sites"], [
            {"file": "/home/u/cache.py", "line": 40, "function": "keep", "blocks": 1,
             "bytes": 32 * MiB},
            {"file": "/home/u/model.py", "line": 12, "function": "forward", "blocks": 1,
             "bytes": 8 * MiB},
            {"file": "/home/u/train.py", "line": 87, "function": "collate", "blocks": 2,
             "bytes": 6 * MiB},
            {"file": TORCH + "/nn/modules/linear.py", "line": 125, "function": "forward",
             "blocks": 1, "bytes": MiB}])
        # only the first segment holds free blocks: its tensors keep that hole
        self.assertEqual([s["file"] for s in dev["stranding_sites"]],
                         ["/home/u/model.py", "/home/u/train.py", TORCH + "/nn/modules/linear.py"])
        self.assertEqual(dev["unattributed"], {"blocks": 1, "bytes": 512})
        self.assertIsNone(dev["sites_reason"])

    def test_at_most_twenty_sites_and_long_names_are_cut(self):
        blocks = [block(A, MiB + k, [("/home/u/" + "x" * 300, k, "f" * 200)]) for k in range(30)]
        sites = summarise([segment(0, blocks)])["sites"]
        self.assertEqual(len(sites), 20)
        self.assertEqual(sites[0]["bytes"], MiB + 29)
        self.assertEqual((len(sites[0]["file"]), len(sites[0]["function"])), (256, 128))

    def test_names_from_the_jobs_stack_are_written_as_data(self):
        evil = ("/home/u/\x1b[2J\x07\"x\\.py", 1, "f\nforged\u2028")
        dev = summarise([segment(0, [block(A, MiB, [evil])])])
        text = probe.files.to_json(dev["sites"])
        self.assertNotIn("\x1b", text)
        self.assertNotIn("\n", text)
        self.assertIn("\\u001b[2J\\u0007", text)
        self.assertEqual(json.loads(text)[0]["file"], evil[0])
        self.assertEqual(json.loads(text)[0]["function"], evil[2])

    def test_without_recording_and_without_frames_there_are_no_sites(self):
        dev = summarise([segment(0, [block(A, MiB), block(F, MiB)])], recording=False)
        self.assertEqual((dev["sites"], dev["stranding_sites"]), (None, None))
        self.assertEqual(dev["sites_reason"], "allocation history is not being recorded")
        self.assertEqual(dev["unattributed"], {"blocks": 1, "bytes": MiB})


class Pprof(unittest.TestCase):
    BUFFERS = [("cuda:0", 3, 3 * MiB, [("/site-packages/jax/_src/array.py", 10, "device_put"),
                                        ("/home/u/jaxjob.py", 7, "make_cache")]),
               ("cuda:1", 1, 6 * 2**20, [("/home/u/jaxjob.py", 12, "make_big")]),
               ("cuda:0", 1, 1 << 40, [])]

    def test_samples_with_their_devices_values_and_stacks(self):
        for packed in (True, False):
            samples = probe.pprof.samples(pprof_encode.encode(self.BUFFERS, packed=packed))
            self.assertEqual(samples[0], ("cuda:0", 3, 3 * MiB, [
                {"filename": "/site-packages/jax/_src/array.py", "line": 10, "name": "device_put"},
                {"filename": "/home/u/jaxjob.py", "line": 7, "name": "make_cache"}]))
            self.assertEqual(samples[1][:3], ("cuda:1", 1, 6 * MiB))
            self.assertEqual(samples[2], ("cuda:0", 1, 1 << 40, []))

    def test_not_gzipped_and_broken_profiles(self):
        raw = gzip.decompress(pprof_encode.encode(self.BUFFERS))
        self.assertEqual(len(probe.pprof.samples(raw)), 3)
        for broken in (raw[:-3], b"\x0a\xff\xff\xff\xff\x0f", b"\x07"):
            with self.assertRaises((ValueError, IndexError)):
                probe.pprof.samples(broken)

    def test_device_labels(self):
        for label, index in (("cuda:0", 0), ("CudaDevice(id=12)", 12), ("gpu", None),
                             (None, None)):
            self.assertEqual(probe.pprof.label_index(label), index, label)


class Requests(unittest.TestCase):
    def test_the_request_line(self):
        cases = {
            b"gpumon.request/1 map 7\n": ("map", 7, None),
            b"gpumon.request/1 export 18446744073709551615": ("export", 2**64 - 1, None),
            b"gpumon.request/1 record-on 1": ("record-on", 1, None),
            b"gpumon.request/1 exec 5\n": ("exec", 5, "unknown verb"),
            b"gpumon.request/1 map 18446744073709551616": ("map", None, "bad id"),
            b"gpumon.request/1 map 123456789012345678901": ("map", None, "bad id"),
            b"gpumon.request/1 map -3": ("map", None, "bad id"),
            b"gpumon.request/1 map 0x10": ("map", None, "bad id"),
            b"gpumon.request/2 map 4": ("map", 4, "not a gpumon.request/1 line"),
            b"gpumon.request/1  map 4": ("?", None, "not a gpumon.request/1 line"),
            b"gpumon.request/1 map 4 extra": ("?", None, "not a gpumon.request/1 line"),
            b"\xff\xfe": ("?", None, "not a gpumon.request/1 line"),
            b"": ("?", None, "not a gpumon.request/1 line"),
        }
        for data, expected in cases.items():
            self.assertEqual(probe.channel.parse_request(data), expected, data)


if __name__ == "__main__":
    unittest.main()
