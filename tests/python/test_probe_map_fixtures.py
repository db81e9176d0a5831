"""The probe's maps of real pools captured on an H100 (torch 2.11, jax 0.11.2) by
scripts/gpu/capture_pool_maps.py, trimmed by scripts/trim_pool_maps.py into
tests/fixtures/probe-maps:
a fragmented pool, the same pool at a 1 GiB OOM under a cap, GPT-2 training with allocation
history (a slice of every step's logits kept: a leak), and a JAX device memory profile."""
import gzip
import json
import os
import unittest

from probe_harness import REPO, ProbeTest, frameworks, load_probe

probe = load_probe()
FIXTURES = os.path.join(REPO, "tests", "fixtures", "probe-maps")
TORCH = "/opt/torch/.venv/lib/python3.12/site-packages/torch"
CAPTURE = "/work/main/scripts/gpu/capture_pool_maps.py"  # where the capture ran
MiB, GiB = 1 << 20, 1 << 30


def fixture(name):
    with gzip.open(os.path.join(FIXTURES, name), "rt") as f:
        return json.load(f)


def blocks(segments, state):
    return [b["size"] for s in segments for b in s["blocks"] if b["state"] == state]


class RealPyTorchPools(unittest.TestCase):
    def test_the_fragmented_pool_matches_memory_stats_of_the_same_moment(self):
        frag = fixture("torch-frag.json.gz")
        segments, stats = frag["snapshot"]["segments"], frag["stats"]
        dev = probe.torch_map.summarise(segments, 2048, [TORCH], False)
        self.assertEqual(dev["allocated"], stats["allocated_bytes.all.current"])
        self.assertEqual(dev["reserved"], stats["reserved_bytes.all.current"])
        self.assertEqual(dev["free"], stats["reserved_bytes.all.current"]
                         - stats["active_bytes.all.current"])
        self.assertEqual(dev["free"], stats["inactive_split_bytes.all.current"])  # all stranded
        self.assertEqual(dev["largest_free"], max(blocks(segments, "inactive")))
        self.assertEqual(dev["segments_total"], stats["segment.all.current"])
        # 384 x 8 MiB in 20 MiB segments, every other freed: an 8 MiB tensor and a 12 MiB hole each
        self.assertEqual(dev["holes"], [[MiB, 0, 0], [8 * MiB, 0, 0],
                                        [64 * MiB, 192, 192 * 12 * MiB], [512 * MiB, 0, 0],
                                        [None, 0, 0]])
        self.assertEqual({tuple(map(tuple, s["runs"])) for s in dev["segments"]},
                         {(("a", 1, 8 * MiB, 8 * MiB), ("f", 1, 12 * MiB, 12 * MiB))})
        self.assertEqual(dev["sites_reason"], "allocation history is not being recorded")

    def test_the_history_names_the_lines_that_hold_the_memory(self):
        segments = fixture("torch-history.json.gz")["snapshot"]["segments"]
        dev = probe.torch_map.summarise(segments, 2048, [TORCH], True)
        sites = {(s["file"], s["line"]): s for s in dev["sites"]}
        # capture_pool_maps.py: 69 model.cuda(), 76 opt.step() (AdamW's state), 78 the leak
        self.assertEqual(dev["sites"][0]["line"], 76)
        self.assertEqual(sites[(CAPTURE, 69)]["bytes"], 154417152)
        leak = sites[(CAPTURE, 78)]
        self.assertEqual((leak["function"], leak["blocks"], leak["bytes"]),
                         ("<module>", 12, 12 * 2 * MiB))  # one kept slice a step, 12 steps
        attributed = sum(s["bytes"] for s in dev["sites"]) + dev["unattributed"]["bytes"]
        self.assertEqual(attributed, dev["allocated"])
        self.assertFalse([s for s in dev["sites"] if s["file"].startswith(TORCH)])


class RealOom(ProbeTest):
    def test_the_map_at_a_fragmentation_oom_shows_the_holes_and_the_request(self):
        oom = fixture("torch-oom.json.gz")
        self.job("import gzip, json, torch\nwith gzip.open(%r, 'rt') as f:\n"
                 "    torch.cuda._snapshot = json.load(f)['snapshot']['segments']\n"
                 % os.path.join(FIXTURES, "torch-oom.json.gz"), "segments.py")
        script = self.fakes_job("""
            import torch
            from jobtools import read_map
            import segments
            torch.cuda._lazy_init()
            wait_tick()
            try:
                torch.cuda._oom(*%r)
            except torch.cuda.OutOfMemoryError:
                pass
            print(json.dumps(read_map()))
        """ % (oom["observer"]["args"],))
        the_map = self.output_json(script)
        self.assertEqual(the_map["oom"], {"device": 0, "request": GiB,
                                          "device_allocated": 4563402752,  # the 4.25 GiB cap
                                          "device_free": 80438558720})
        (dev,) = frameworks(the_map)["pytorch"]["devices"]
        # "1.50 GiB is allocated by PyTorch, and 2.25 GiB is reserved by PyTorch but unallocated"
        self.assertEqual((dev["allocated"], dev["free"]), (1536 * MiB, 2304 * MiB))
        self.assertLess(dev["largest_free"], the_map["oom"]["request"])
        self.assertEqual(dev["largest_free"], 12 * MiB)
        self.assertEqual(sum(h[1] for h in dev["holes"]), 192)


class RealJaxProfile(unittest.TestCase):
    def test_sites_from_the_device_memory_profile_add_up_to_bytes_in_use(self):
        with open(os.path.join(FIXTURES, "jax-profile.pb.gz"), "rb") as f:
            profile = f.read()
        with open(os.path.join(FIXTURES, "jax-live.json")) as f:
            live = json.load(f)
        by_index = {0: probe.common.map_device(0, None)}
        probe.read_jax.profile_sites(profile, by_index, ["/opt/torch/.venv/lib/python3.12/site-packages"])
        dev = by_index[0]
        self.assertEqual(dev["sites"], [
            {"file": CAPTURE, "line": 106, "function": "make_cache", "blocks": 200,
             "bytes": 200 * MiB},
            {"file": CAPTURE, "line": 109, "function": "make_big", "blocks": 1,
             "bytes": 8 * 512 * 768 * 2}])
        self.assertEqual(sum(s["bytes"] for s in dev["sites"]), live["stats"]["bytes_in_use"])
        self.assertIsNone(dev["unattributed"])
        labels = {s[0] for s in probe.pprof.samples(profile)}
        self.assertEqual(labels, {"cuda:0", None})  # compiled executables carry no device


if __name__ == "__main__":
    unittest.main()
