"""Unit tests of the alert benchmark's truth rule and scoring (stdlib only, no GPU, no gpumon):
python3 -m unittest discover -s scripts -p test_alert_bench.py"""
import os
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from alertbench import oomtext, score, series, truth  # noqa: E402

GiB, MiB = 1 << 30, 1 << 20
# reference: oom-formats-and-nvml.md §1.1 (current format, and the ~2.1 "capacty" one)
PT_NEW = ("CUDA out of memory. Tried to allocate 19.68 GiB. GPU 0 has a total capacity of 23.68 "
          "GiB of which 11.88 GiB is free. Including non-PyTorch memory, this process has 11.79 "
          "GiB memory in use. Of the allocated memory 11.44 GiB is allocated by PyTorch, and 43.59 "
          "MiB is reserved by PyTorch but unallocated.")
PT_21 = ("CUDA out of memory. Tried to allocate 496.00 MiB. GPU 0 has a total capacty of 14.75 GiB "
         "of which 235.06 MiB is free. Process 20398 has 14.52 GiB memory in use. Of the allocated "
         "memory 14.06 GiB is allocated by PyTorch, and 330.42 MiB is reserved by PyTorch but "
         "unallocated.")
PT_FRAG = ("CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 79.18 "
           "GiB of which 74.76 GiB is free. Including non-PyTorch memory, this process has 4.41 GiB "
           "memory in use. 4.00 GiB allowed; Of the allocated memory 1.76 GiB is allocated by "
           "PyTorch, and 2.15 GiB is reserved by PyTorch but unallocated.")
PT_CAP = ("CUDA out of memory. Tried to allocate 394.00 MiB. GPU 0 has a total capacity of 79.18 "
          "GiB of which 69.27 GiB is free. Including non-PyTorch memory, this process has 9.90 GiB "
          "memory in use. 9.50 GiB allowed; Of the allocated memory 8.97 GiB is allocated by "
          "PyTorch, and 206.87 MiB is reserved by PyTorch but unallocated.")
CUPY = ("Out of memory allocating 67,108,864 bytes (allocated so far: 6,375,407,616 bytes, limit "
        "set to: 6,442,450,944 bytes).")


def torch_figures(text, pid=7):
    return truth.figures("pytorch", {"text": text}, pid, None)


class Texts(unittest.TestCase):
    def test_pytorch_current_and_old_formats(self):
        f = oomtext.pytorch(PT_NEW, own_pid=7)
        self.assertEqual(f["request"], oomtext.size("19.68 GiB"))
        self.assertEqual(f["holders"], [{"pid": 7, "bytes": oomtext.size("11.79 GiB")}])
        self.assertIsNone(f["cap"])
        old = oomtext.pytorch(PT_21)
        self.assertEqual(old["holders"][0]["pid"], 20398)
        self.assertEqual(old["stranded"], oomtext.size("330.42 MiB"))

    def test_sizes_jax_and_cupy(self):
        self.assertEqual(oomtext.size("0 bytes"), 0)
        self.assertEqual(oomtext.xla("RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
                                     "7406166528 bytes."), 7406166528)
        self.assertEqual(oomtext.xla("Out of memory while trying to allocate 16.01MiB with"),
                         round(16.01 * MiB))
        self.assertEqual(oomtext.cupy(CUPY), {"request": 67108864, "pool": 6375407616,
                                              "cap": 6442450944})
        self.assertIsNone(oomtext.pytorch("CUDA error: out of memory"))


    def test_framework_from_the_start_line_else_the_text(self):
        self.assertEqual(truth.framework([{"ev": "start", "jax": "0.11"}]), "jax")
        self.assertEqual(truth.framework([{"ev": "start"}], PT_CAP), "pytorch")
        self.assertEqual(truth.framework([], CUPY), "cupy")
        self.assertIsNone(truth.framework([], "killed"))


class Classes(unittest.TestCase):
    def test_stranded_that_matters_is_fragmentation(self):
        self.assertEqual(truth.classify(torch_figures(PT_FRAG)), "fragmentation")

    def test_a_full_cap_with_little_stranded_is_pool_limit(self):
        self.assertEqual(truth.classify(torch_figures(PT_CAP)), "pool-limit")

    def test_a_full_gpu_is_device_full_and_a_split_too(self):
        # 330 MiB stranded + 235 MiB free would fit 496 MiB (the reference's "split"): the
        # GPU had less free than asked, so device-full by this rule.
        self.assertEqual(truth.classify(torch_figures(PT_21)), "device-full")

    def test_a_few_stranded_mib_at_a_full_pool_are_not_fragmentation(self):
        f = {"request": 16 * MiB, "allocated": 9216 * MiB, "pool": 9234 * MiB,
             "stranded": 18 * MiB, "cap": 9234 * MiB, "gpu_free": 60 * GiB}
        self.assertEqual(truth.classify(f), "pool-limit")

    def test_cupy_limit(self):
        f = truth.figures("cupy", {"text": CUPY, "allocated": 6375407616}, 3, None)
        f["gpu_free"] = 70 * GiB
        self.assertEqual(truth.classify(f), "pool-limit")

    def test_cap_and_full_gpu_at_once_is_unknown(self):
        f = {"request": GiB, "allocated": 3 * GiB, "pool": 3 * GiB, "stranded": 0,
             "cap": 3 * GiB, "gpu_free": 100 * MiB}
        self.assertEqual(truth.classify(f), "unknown")


class Climbs(unittest.TestCase):
    def test_a_steady_rise_is_one_climb(self):
        pts = [(float(t), t * 200 * MiB) for t in range(40)]
        self.assertEqual(series.climb(pts, 40.5)[0], 0.0)

    def test_a_release_ends_the_climb(self):
        pts = [(float(t), (t % 20) * 200 * MiB) for t in range(40)]
        self.assertEqual(series.climb(pts, 40.5)[0], 20.0)

    def test_a_long_pause_ends_it_and_flat_is_none(self):
        pts = [(0.0, 0), (1.0, GiB)] + [(float(t), GiB) for t in range(2, 10)] + \
              [(10.0, 2 * GiB), (11.0, 3 * GiB)]
        self.assertEqual(series.climb(pts, 12)[0], 9.0)
        self.assertIsNone(series.climb([(float(t), GiB) for t in range(10)], 11))

    def test_leak_needs_time_and_half_the_headroom(self):
        events = [{"ev": "step", "t": float(t), "allocated": GiB + t * 100 * MiB}
                  for t in range(30)]
        f = {"cap": 6 * GiB, "pool": None, "gpu_free": None}
        self.assertTrue(truth.leak("pool-limit", f, events, 31)[0])
        self.assertFalse(truth.leak("fragmentation", f, events, 31)[0])
        f["cap"] = 20 * GiB  # rose 2.9 GiB of 19 GiB headroom: growth, not a leak to the cap
        self.assertFalse(truth.leak("pool-limit", f, events, 31)[0])

    def test_a_peak_that_grows_over_a_flat_floor_is_a_growing_peak_and_its_build_up(self):
        # 1.5 GiB between steps; each step's peak 170 MiB above the last, toward a 12 GiB cap.
        events = [{"ev": "step", "t": t / 2, "allocated": 3 * GiB // 2,
                   "peak_allocated": 2 * GiB + t * 85 * MiB} for t in range(120)]
        f = {"cap": 12 * GiB, "pool": 12 * GiB, "gpu_free": 60 * GiB}
        is_leak, c = truth.leak("pool-limit", f, events, 60.5)
        self.assertFalse(is_leak)
        grows, pc = truth.peak_growth("pool-limit", f, events, 60.5, is_leak)
        self.assertTrue(grows)
        self.assertEqual(truth.build_up("pool-limit", events, [], None, 60.5, c, pc), 60.5)
        # A warm-up that stopped half-way a minute before: no growing peak at the OOM.
        flat = [dict(e, peak_allocated=min(e["peak_allocated"], 6 * GiB)) for e in events]
        self.assertFalse(truth.peak_growth("pool-limit", f, flat, 60.5, False)[0])
        self.assertFalse(truth.peak_growth("pool-limit", f, events, 60.5, True)[0])

    def test_expandable_segments_measure_fragmentation_on_the_whole_free_part(self):
        events = [{"ev": "start", "torch": "2.11"}] + [
            {"ev": "step", "t": float(t), "allocated": GiB + t * 128 * MiB,
             "reserved": GiB + t * 256 * MiB, "stranded": 0} for t in range(30)]
        job = {"env": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}}
        self.assertTrue(truth.expandable(job, events))
        self.assertFalse(truth.expandable({"env": {}}, events))
        self.assertEqual(truth.build_up("fragmentation", events, [], None, 30.5, None,
                                        whole_free=True), 30.5)
        self.assertEqual(truth.build_up("fragmentation", events, [], None, 30.5, None), 0.0)

    def test_a_slow_leak_is_a_floor_that_climbs_minute_after_minute(self):
        # 2 MiB a step, a step every 0.8 s (150 MiB a minute), in-step temporaries on top.
        steps = [{"ev": "step", "t": 10 + k * 0.8,
                  "allocated": GiB + k * 2 * MiB + (k % 3) * 300 * MiB} for k in range(900)]
        s = truth.slow_leak(steps)
        self.assertIsNotNone(s)
        self.assertAlmostEqual(s["rate_mib_min"], 150, delta=5)
        self.assertLess(s["start_ms"], 71_000)
        # Flat between steps, or a climb that was released, is none.
        flat = [dict(e, allocated=GiB + (i % 3) * 300 * MiB) for i, e in enumerate(steps)]
        self.assertIsNone(truth.slow_leak(flat))
        saw = [dict(e, allocated=GiB + (i % 150) * 2 * MiB) for i, e in enumerate(steps)]
        self.assertIsNone(truth.slow_leak(saw))

    def test_one_cache_flush_is_not_a_near_failure(self):
        ok = [{"ev": "step", "allocated": GiB, "peak_allocated": 3 * GiB, "retries": 1,
               "ooms": 0, "limit": 4 * GiB, "reserved": 3 * GiB, "gpu_free": 70 * GiB}]
        self.assertFalse(truth.near_failure(ok))
        ok[0]["peak_allocated"] = int(3.9 * GiB)
        self.assertTrue(truth.near_failure(ok))


class LeakFirst(unittest.TestCase):
    """A leak that fragments (the issue's H100 GPT-2: 13 MB kept a step at 15 steps a second
    under a 16 GiB cap, 2.12 GiB stranded at a 786 MiB request): a leak first."""
    OOM = {"t_ms": 60_000, "pid": 7, "class": "fragmentation", "leak": False, "build_up_s": 0.0,
           "request": 786 * MiB, "allocated": int(13.61 * GiB), "pool": int(15.73 * GiB),
           "stranded": int(2.12 * GiB), "limit": 16 * GiB, "gpu_free": int(62.9 * GiB)}

    def truth_of(self, per_s, slow=None, **figures):
        # Per-second floors: weights and AdamW's state, then what the helper keeps.
        floors = [[1000 * (5 + k), GiB + k * per_s, None] for k in range(55)]
        t = {"oom": dict(self.OOM, **figures), "series": {"7": floors}}
        if slow:
            t["slow_leak"] = slow
        return truth.leak_first(t)["oom"]

    def test_a_floor_that_climbs_into_the_oom_makes_it_a_leak_then_fragmentation(self):
        oom = self.truth_of(195 * 1000 * 1000)
        self.assertEqual((oom["class"], oom["second"], oom["leak"]), ("leak", "fragmentation", True))
        self.assertAlmostEqual(oom["buys_s"], 11.7, delta=0.5)  # 2.12 GiB at 195 MB/s
        self.assertAlmostEqual(oom["build_up_s"], 55.0, delta=1)

    def test_a_flat_floor_stays_fragmentation(self):
        self.assertEqual(self.truth_of(0)["class"], "fragmentation")
        # A climb too small for the way to the cap (a tenth of it) is not the leak's OOM either.
        self.assertEqual(self.truth_of(4 * MiB)["class"], "fragmentation")

    def test_a_slow_leak_into_the_oom_that_kept_more_than_is_stranded_is_a_leak(self):
        # The corpus's slow-leak run: 156 MiB a minute for 9 minutes, 444 MiB stranded.
        slow = {"pid": 7, "start_ms": 0, "minutes": 9.0, "rate_mib_min": 156.2}
        oom = self.truth_of(0, slow, stranded=444 * MiB)
        self.assertEqual(oom["class"], "leak")
        self.assertAlmostEqual(oom["buys_s"], 444 / 156.2 * 60, delta=1)
        # Kept less than what is stranded: fragmentation first.
        self.assertEqual(self.truth_of(0, slow)["class"], "fragmentation")

    def test_other_classes_are_left_alone(self):
        t = {"oom": dict(self.OOM, **{"class": "pool-limit"}),
             "series": {"7": [[1000 * k, GiB + k * 200 * MiB, None] for k in range(50)]}}
        self.assertEqual(truth.leak_first(t)["oom"]["class"], "pool-limit")
        self.assertEqual(truth.leak_first({"oom": None}), {"oom": None})


class Scoring(unittest.TestCase):
    OOM = {"t_ms": 100_000, "pid": 7, "gpu": 0, "class": "pool-limit", "leak": True,
           "build_up_s": 40.0}

    def run_with(self, alerts, oom=OOM, near=False):
        t = {"name": "x", "group": "failing", "healthy": oom is None, "near_failure": near,
             "recorded_s": 60.0, "oom": oom}
        return score.score_run(t, alerts)

    def test_lead_class_and_leak(self):
        alerts = [
            {"at_ms": 50_000, "level": "suspected", "class": "time-to-full", "pid": None, "gpu": 0},
            {"at_ms": 70_000, "level": "suspected", "class": "leak", "pid": 7, "gpu": 0},
            {"at_ms": 90_000, "level": "suspected", "class": "pool-near-limit", "pid": 7},
            {"at_ms": 100_500, "level": "failure", "class": "pool-limit", "pid": 7, "title": ""},
        ]
        r = self.run_with(alerts)
        self.assertTrue(r["class_right"] and r["leak_named"])
        self.assertEqual((r["lead_s"], r["lead_kind"]), (30.0, "leak"))
        self.assertEqual([w["verdict"] for w in r["warnings"]], ["off-cause", "lead", "lead"])
        self.assertEqual(score.goals([r]), [])

    def test_a_rank_growing_alone_is_its_leak_and_a_stray_context_leads_its_gpu_s_oom(self):
        alerts = [
            {"at_ms": 70_000, "level": "suspected", "class": "rank-grows-alone", "pid": 7,
             "gpu": 0},
            {"at_ms": 100_500, "level": "failure", "class": "pool-limit", "pid": 7, "title": ""},
        ]
        r = self.run_with(alerts)
        self.assertTrue(r["class_right"] and r["leak_named"])
        self.assertEqual((r["lead_s"], r["lead_kind"]), (30.0, "rank-grows-alone"))
        oom = dict(self.OOM, **{"class": "device-full", "leak": False})
        alerts = [{"at_ms": 60_000, "level": "suspected", "class": "rank-extra-context",
                   "pid": None, "gpu": 0},
                  {"at_ms": 100_100, "level": "failure", "class": "device-full", "pid": 7}]
        r = self.run_with(alerts, oom=oom)
        self.assertEqual([w["verdict"] for w in r["warnings"]], ["lead"])

    def test_a_warning_about_another_process_s_idle_pool_leads_a_device_full_oom(self):
        oom = dict(self.OOM, **{"class": "device-full", "leak": False})
        alerts = [{"at_ms": 60_000, "level": "suspected", "class": "idle-preallocation",
                   "pid": 9, "gpu": 0},
                  {"at_ms": 61_000, "level": "suspected", "class": "pool-near-limit", "pid": 9,
                   "gpu": 0},
                  {"at_ms": 100_100, "level": "failure", "class": "device-full", "pid": 7}]
        r = self.run_with(alerts, oom=oom)
        self.assertEqual([w["verdict"] for w in r["warnings"]], ["lead", "off-cause"])
        self.assertEqual(r["lead_s"], 40.0)

    def test_time_to_limit_follows_its_title(self):
        mk = lambda title: {"class": "time-to-limit", "title": title, "pid": 7}  # noqa: E731
        self.assertEqual(score.causes(mk("pid 7 reaches its 9.50 GiB cap in 20s")), {"pool-limit"})
        self.assertEqual(score.causes(mk("GPU0 free memory runs out in 20s")), {"device-full"})
        self.assertEqual(score.causes({"class": "preallocation", "title": ""}), set())
        self.assertEqual(score.causes({"class": "growing-peak"}), {"pool-limit", "device-full"})
        self.assertEqual(score.causes({"class": "idle-preallocation"}), {"device-full"})

    def test_every_warning_on_a_healthy_run_is_a_false_alarm(self):
        alerts = [{"at_ms": 1, "level": "suspected", "class": "preallocation", "pid": 7},
                  {"at_ms": 2, "level": "notice", "class": "probe", "pid": 7}]
        r = self.run_with(alerts, oom=None)
        self.assertEqual([w["verdict"] for w in r["warnings"]], ["false-alarm"])
        self.assertEqual(len(score.goals([r])), 1)
        r = self.run_with(alerts, oom=None, near=True)
        self.assertEqual([w["verdict"] for w in r["warnings"]], ["excused"])

    def test_a_slow_leak_is_scored_in_minutes_of_climb(self):
        t = {"name": "slow", "group": "leak", "healthy": False, "near_failure": False,
             "recorded_s": 600.0, "oom": None,
             "slow_leak": {"pid": 7, "start_ms": 60_000, "rate_mib_min": 150.0, "minutes": 9}}
        alerts = [{"at_ms": 200_000, "level": "suspected", "class": "leak", "pid": 7},
                  {"at_ms": 210_000, "level": "suspected", "class": "pool-near-limit", "pid": 7}]
        r = score.score_run(t, alerts)
        self.assertEqual(r["slow_leak_min"], 2.3)
        self.assertEqual([w["verdict"] for w in r["warnings"]], ["slow-leak", "off-cause"])
        self.assertEqual(score.goals([r]), [])
        late = score.score_run(t, [dict(alerts[0], at_ms=300_000)])
        self.assertEqual(len(score.goals([late])), 1)
        self.assertEqual(len(score.goals([score.score_run(t, [])])), 1)

    def test_a_slow_leak_warning_stays_true_when_the_run_fails_of_another_cause(self):
        t = {"name": "slow", "group": "failing", "healthy": False, "near_failure": False,
             "recorded_s": 600.0,
             "oom": {"t_ms": 500_000, "pid": 7, "gpu": 0, "class": "fragmentation",
                     "leak": False, "build_up_s": 0.0},
             "slow_leak": {"pid": 7, "start_ms": 60_000, "rate_mib_min": 150.0, "minutes": 7}}
        alerts = [{"at_ms": 200_000, "level": "suspected", "class": "leak", "pid": 7},
                  {"at_ms": 210_000, "level": "suspected", "class": "growing-peak", "pid": 9},
                  {"at_ms": 520_000, "level": "suspected", "class": "leak", "pid": 7},
                  {"at_ms": 500_000, "level": "failure", "class": "fragmentation", "pid": 7}]
        r = score.score_run(t, alerts)
        self.assertEqual(r["slow_leak_min"], 2.3)
        self.assertEqual([w["verdict"] for w in r["warnings"]],
                         ["slow-leak", "off-cause", "off-cause"])
        self.assertTrue(r["class_right"])

    def test_a_leak_that_fragments_needs_its_leak_named_first(self):
        oom = dict(self.OOM, **{"class": "leak", "second": "fragmentation"})
        leak_failure = {"at_ms": 100_100, "level": "failure", "class": "leak", "pid": 7,
                        "title": "pid 7 PyTorch OOM: leak, +195M/s kept from step to step",
                        "remedy": "Find what keeps memory alive from step to step in pid 7"}
        alerts = [{"at_ms": 60_000, "level": "suspected", "class": "leak", "pid": 7},
                  leak_failure]
        r = self.run_with(alerts, oom=oom)
        self.assertEqual((r["leak_first"], r["lead_s"], r["class_right"]), ("yes", 40.0, True))
        self.assertEqual(score.goals([r]), [])
        # A fragmentation warning first: off-cause, and the leak not named first.
        frag = [{"at_ms": 50_000, "level": "suspected", "class": "fragmentation-risk",
                 "pid": 7}] + alerts
        r = self.run_with(frag, oom=oom)
        self.assertEqual(r["leak_first"], "no: fragmentation-risk warned first")
        self.assertEqual(r["warnings"][0]["verdict"], "off-cause")
        self.assertEqual(len(score.goals([r])), 1)
        # The failure called fragmentation with its allocator setting: wrong twice.
        wrong = dict(leak_failure, **{"class": "fragmentation",
                                       "remedy": "Set PYTORCH_ALLOC_CONF=expandable_segments"})
        r = self.run_with([alerts[0], wrong], oom=oom)
        self.assertEqual(r["leak_first"], "no: the failure names fragmentation's remedy first")
        self.assertEqual(len(score.goals([r])), 2)

    def test_a_pool_limit_leak_is_named_first_after_a_leak(self):
        alerts = [{"at_ms": 70_000, "level": "suspected", "class": "leak", "pid": 7},
                  {"at_ms": 100_500, "level": "failure", "class": "pool-limit", "pid": 7,
                   "title": "pid 7 PyTorch OOM: pool-limit after a leak, asked 394.00 MiB",
                   "remedy": "Find what keeps memory alive from step to step in pid 7"}]
        self.assertEqual(self.run_with(alerts)["leak_first"], "yes")

    def test_a_wrong_class_and_a_late_warning_fail_the_goals(self):
        alerts = [{"at_ms": 95_000, "level": "suspected", "class": "pool-near-limit", "pid": 7},
                  {"at_ms": 100_100, "level": "failure", "class": "fragmentation", "pid": 7}]
        goals = score.goals([self.run_with(alerts)])
        self.assertEqual(len(goals), 2, goals)


if __name__ == "__main__":
    unittest.main()
