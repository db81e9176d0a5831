"""Maps, requests, recording, the OOM observer and exports from inside test jobs: the hook runs as
it does under gpumon, against the fake torch, jax, cupy and tensorflow modules."""
import os
import pickle
import stat
import unittest

import pprof_encode
from probe_harness import ProbeTest, fake_libcuda, frameworks

MiB = 1 << 20
SEGMENTS = """
import torch
MiB = 1 << 20
USER = [{"filename": "/usr/lib/python3/dist-packages/torch/nn/modules/module.py", "line": 1750,
         "name": "_call_impl"}, {"filename": "/home/u/train.py", "line": 87, "name": "collate"}]
torch.cuda._snapshot = [
    {"device": 0, "address": 4096 * MiB, "total_size": 20 * MiB, "segment_type": "large",
     "stream": 0, "is_expandable": False, "segment_pool_id": (0, 0), "frames": [],
     "blocks": [{"state": "active_allocated", "size": 8 * MiB, "frames": USER},
                {"state": "inactive", "size": 8 * MiB, "frames": []},
                {"state": "inactive", "size": 4 * MiB, "frames": []}]}]
torch.cuda._stats = {0: {"allocated_bytes.all.current": 8 * MiB,
                         "reserved_bytes.all.current": 20 * MiB}}
"""


class Torch(ProbeTest):
    def setUp(self):
        super().setUp()
        self.job(SEGMENTS, "segments.py")  # a pool the jobs below import

    def test_recording_and_the_oom_observer_start_when_the_job_initialises_cuda(self):
        script = self.fakes_job("""
            import torch
            from jobtools import read_map
            import segments
            before = wait_tick()
            early = [torch.cuda.memory.early_calls, torch._C.attached_early,
                     list(torch.cuda.memory.history_calls)]
            torch.cuda._lazy_init()  # the job's first CUDA call
            after = wait_tick()
            try:
                torch.cuda._oom(0, 1 << 30, 75 << 30, 512 << 20)
            except torch.cuda.OutOfMemoryError as e:
                print("job saw:", e, file=sys.stderr)
            oom_map = read_map()
            print(json.dumps([before["recording"], early, after["recording"],
                              torch.cuda.memory.history_calls, len(torch._C.observers),
                              oom_map, wait_tick()["map_at_ms"]]))
        """)
        before, early, after, calls, observers, oom_map, map_at = self.run_and_load(script)
        self.assertEqual(before, {"on": False, "max_entries": 1000, "stacks": "python",
                                  "since_ms": None,
                                  "reason": "starts when the process initialises CUDA"})
        self.assertEqual(early, [0, 0, []])  # nothing that would initialise CUDA
        self.assertEqual((after["on"], after["reason"]), (True, None))
        self.assertIsInstance(after["since_ms"], int)
        self.assertEqual(calls, [["all", "python", 1000]])
        self.assertEqual(observers, 1)
        self.assertEqual((oom_map["reason"], oom_map["request_id"], map_at),
                         ("oom", None, oom_map["at_ms"]))
        self.assertEqual(oom_map["oom"], {"device": 0, "request": 1 << 30,
                                          "device_allocated": 75 << 30,
                                          "device_free": 512 << 20})
        (dev,) = frameworks(oom_map)["pytorch"]["devices"]
        self.assertEqual((dev["free"], dev["largest_free"], dev["allocated"]),
                         (12 * MiB, 8 * MiB, 8 * MiB))
        self.assertEqual(dev["sites"], [{"file": "/home/u/train.py", "line": 87,
                                         "function": "collate", "blocks": 1, "bytes": 8 * MiB}])

    def test_queued_while_torch_imports_so_a_job_that_starts_cuda_at_once_is_recorded(self):
        script = self.fakes_job("""
            import torch  # takes 0.3 s after torch.cuda is loaded, as the real one goes on
            torch.cuda._lazy_init()  # at once: no tick of the 1 s interval came in between
            print(json.dumps([torch.cuda.memory.history_calls, len(torch._C.observers)]))
        """)
        calls, observers = self.output_json(script, GPUMON_PROBE_RECORD="1",
                                            GPUMON_PROBE_INTERVAL_MS="1000",
                                            FAKE_TORCH_IMPORT_DELAY="0.3")
        self.assertEqual((calls, observers), ([["all", "python", 100000]], 1))

    def run_and_load(self, script):
        done = self.run_job(script, GPUMON_PROBE_RECORD="1", GPUMON_PROBE_RECORD_ENTRIES="5")
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        self.assertIn(b"job saw: CUDA out of memory", done.stderr)
        return __import__("json").loads(done.stdout)

    def test_a_map_on_request_then_rate_limited(self):
        script = self.fakes_job("""
            import torch
            from jobtools import request, wait_answer, read_map
            import segments
            torch.cuda._lazy_init()
            request("gpumon.request/1 map 41\\n")
            first = wait_answer(41)
            the_map = read_map()
            request("gpumon.request/1 map 42\\n")
            second = wait_answer(42)
            print(json.dumps([first, the_map, second]))
        """)
        first, the_map, second = self.output_json(script)
        pid = the_map["pid"]
        self.assertEqual(first["answer"], {"id": 41, "verb": "map", "ok": True,
                                           "detail": "%d.map.json" % pid})
        self.assertEqual(first["map_at_ms"], the_map["at_ms"])
        self.assertEqual(list(the_map), ["schema", "pid", "start_time", "at_ms", "reason",
                                         "request_id", "took_us", "oom", "frameworks"])
        self.assertEqual((the_map["schema"], the_map["reason"], the_map["request_id"]),
                         ("gpumon.map/1", "request", 41))
        (dev,) = frameworks(the_map)["pytorch"]["devices"]
        # not recording, yet the block carries frames (recorded before): its site is known
        self.assertEqual([(s["file"], s["line"]) for s in dev["sites"]], [("/home/u/train.py", 87)])
        self.assertEqual(dev["segments"][0]["runs"], [["a", 1, 8 * MiB, 8 * MiB],
                                                      ["f", 2, 12 * MiB, 8 * MiB]])
        self.assertEqual(second["answer"], {"id": 42, "verb": "map", "ok": False,
                                            "detail": "rate limited"})
        path = os.path.join(self.probe_dir, "%d.map.json" % pid)
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)

    def test_while_history_is_recorded_the_jobs_main_thread_takes_the_snapshot(self):
        # On an H100 (torch 2.11) a snapshot taken from the probe's thread while the job
        # allocated with history on crashed the job: the job's main thread takes it (a pending
        # call at its next bytecode boundary), the probe's thread maps or pickles it, and the
        # largest free block is not looked for from the probe's thread.
        script = self.fakes_job("""
            import os, pickle, time, torch
            from jobtools import request, wait_answer, read_map
            import segments
            torch.cuda._stats[0]["inactive_split_bytes.all.current"] = 4 << 30
            torch.cuda._lazy_init()
            torch.cuda.memory._record_memory_history("all", max_entries=1000, stacks="python")
            request("gpumon.request/1 map 51\\n")
            answer = wait_answer(51)["answer"]
            the_map = read_map()
            time.sleep(5.1)  # one map or export every 5 s
            request("gpumon.request/1 export 52\\n")
            export = wait_answer(52)["answer"]
            with open(os.path.join(os.environ["GPUMON_PROBE_DIR"], export["detail"]), "rb") as f:
                exported = pickle.load(f)
            wait_tick()
            taken = [list(torch.cuda.memory.snapshot_threads), torch.cuda._snapshot_calls]
            try:
                torch.cuda._oom(0, 1 << 30, 75 << 30, 512 << 20)
            except torch.cuda.OutOfMemoryError:
                pass
            print(json.dumps([answer, the_map, export, sorted(exported), taken,
                              read_map()["reason"], torch.cuda.memory.snapshot_threads]))
        """)
        answer, the_map, export, keys, taken, reason, threads = self.output_json(script)
        pid = the_map["pid"]
        self.assertEqual(answer, {"id": 51, "verb": "map", "ok": True,
                                  "detail": "%d.map.json" % pid})
        self.assertEqual((the_map["reason"], the_map["request_id"]), ("request", 51))
        (dev,) = frameworks(the_map)["pytorch"]["devices"]
        self.assertEqual([(s["file"], s["line"]) for s in dev["sites"]], [("/home/u/train.py", 87)])
        self.assertEqual(export, {"id": 52, "verb": "export", "ok": True,
                                  "detail": "%d.export.52.pickle" % pid})
        self.assertEqual(keys, ["allocator_settings", "device_traces", "segments"])
        # both snapshots in the main thread; none from the probe's thread, and no
        # memory_snapshot() for the largest free block
        self.assertEqual(taken, [["MainThread", "MainThread"], 0])
        # the OOM's map as before: the observer runs in the thread that allocates
        self.assertEqual((reason, threads[2:]), ("oom", ["MainThread"]))

    def test_requests_before_cuda_is_initialised_never_ask_whether_history_is_recorded(self):
        # torch._C._cuda_isHistoryEnabled() before CUDA is initialised crashed a job on an H100
        # (the fake aborts): requests that come while torch is still importing are answered
        script = self.fakes_job("""
            import time, torch
            from jobtools import request, wait_answer
            import segments
            answers = []
            for n, verb in ((71, "map"), (72, "export")):
                request("gpumon.request/1 %s %d\\n" % (verb, n))
                answers.append(wait_answer(n)["answer"])
                time.sleep(5.1)
            torch.cuda._lazy_init()  # recording starts here
            request("gpumon.request/1 map 73\\n")
            answers.append(wait_answer(73)["answer"])
            print(json.dumps([answers, torch.cuda.memory.snapshot_threads]))
        """)
        answers, threads = self.output_json(script, GPUMON_PROBE_RECORD="1")
        self.assertEqual([(a["id"], a["ok"]) for a in answers], [(71, True), (72, False), (73, True)])
        self.assertEqual(answers[1]["detail"][:17], "nothing to export")
        self.assertEqual(threads, ["MainThread"])

    def test_a_main_thread_that_runs_no_python_gets_no_snapshot_from_another_thread(self):
        script = self.fakes_job("""
            import time, torch
            from jobtools import request, wait_answer
            import segments
            torch.cuda._lazy_init()
            torch.cuda.memory._record_memory_history("all", max_entries=1000, stacks="python")
            request("gpumon.request/1 map 61\\n")
            time.sleep(3.0)  # one C call, longer than the wait (20 intervals of 100 ms, 2 s)
            answer = wait_answer(61)["answer"]
            request("gpumon.request/1 map 62\\n")
            wait_tick()
            second = wait_answer(62, timeout=1.0)
            print(json.dumps([answer, torch.cuda.memory.snapshot_threads,
                              second["answer"] if second else None]))
        """)
        answer, threads, second = self.output_json(script)
        self.assertEqual((answer["verb"], answer["ok"]), ("map", False))
        self.assertIn("job's main thread, which ran no Python for 2 s", answer["detail"])
        # the call still queued ran once the sleep ended and found nothing to take
        self.assertEqual(threads, [])
        self.assertEqual(second, {"id": 62, "verb": "map", "ok": False, "detail": "rate limited"})

    def test_a_slow_map_doubles_the_gap_before_the_next(self):
        script = self.fakes_job("""
            import threading, torch
            from jobtools import request, wait_answer, read_map
            import segments
            torch.cuda._lazy_init()
            torch.cuda.memory.snapshot_delay = 0.3
            request("gpumon.request/1 map 1")
            wait_answer(1)
            (thread,) = [t for t in threading.enumerate() if t.name == "gpumon-probe"]
            print(json.dumps([read_map()["took_us"], thread._target.__self__.map_gap]))
        """)
        took_us, gap = self.output_json(script)
        self.assertGreaterEqual(took_us, 300000)
        self.assertEqual(gap, 10.0)

    def test_record_verbs(self):
        script = self.fakes_job("""
            import torch
            from jobtools import request, wait_answer
            answers = []
            for n, verb in enumerate(["record-on", None, "record-on", "record-off",
                                      "record-off"]):
                if verb is None:
                    torch.cuda._lazy_init()
                    continue
                request("gpumon.request/1 %s %d" % (verb, n))
                doc = wait_answer(n)
                answers.append([doc["answer"]["ok"], doc["answer"]["detail"],
                                doc["recording"]["on"]])
            print(json.dumps([answers, torch.cuda.memory.history_calls,
                              torch.cuda.memory.early_calls]))
        """)
        answers, calls, early = self.output_json(script)
        self.assertEqual(answers, [[True, "starts when the process initialises CUDA", False],
                                   [True, "recording already", True],
                                   [True, "stopped", False],
                                   [True, "not recording", False]])
        self.assertEqual(calls, [["all", "python", 100000], [None, "all", 9223372036854775807]])
        self.assertEqual(early, 0)

    def test_the_probe_does_not_take_over_a_jobs_own_recording(self):
        script = self.fakes_job("""
            import torch
            from jobtools import request, wait_answer
            torch.cuda._lazy_init()
            torch.cuda.memory._record_memory_history(max_entries=7)
            out = []
            for n, verb in enumerate(["record-on", "record-off"]):
                request("gpumon.request/1 %s %d" % (verb, n))
                out.append(wait_answer(n)["answer"]["detail"])
            print(json.dumps([out, torch.cuda.memory._history]))
        """)
        out, history = self.output_json(script)
        self.assertEqual(out, ["the job records its allocation history itself"] * 2)
        self.assertEqual(history, ["all", "all", 7])

    def test_export_writes_what_dump_snapshot_writes(self):
        script = self.fakes_job("""
            import torch
            from jobtools import request, wait_answer
            import segments
            request("gpumon.request/1 export 5")
            before_init = wait_answer(5)["answer"]
            torch.cuda._lazy_init()
            import time; time.sleep(0)
            request("gpumon.request/1 export 18446744073709551615")
            print(json.dumps([before_init, wait_answer(18446744073709551615)["answer"]]))
        """)
        before_init, answer = self.output_json(script)
        self.assertEqual((before_init["ok"], before_init["detail"][:17]),
                         (False, "nothing to export"))
        self.assertTrue(answer["ok"], answer)
        name = answer["detail"]
        self.assertRegex(name, r"^\d+\.export\.18446744073709551615\.pickle$")
        path = os.path.join(self.probe_dir, name)
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        with open(path, "rb") as f:
            snap = pickle.load(f)
        self.assertEqual(set(snap), {"segments", "device_traces", "allocator_settings"})
        self.assertEqual(snap["segments"][0]["total_size"], 20 * MiB)
        self.assertFalse([f for f in self.probe_files() if f.endswith(".tmp")])

    def test_job_output_exit_status_and_imports_are_unchanged_with_everything_on(self):
        script = self.fakes_job("""
            import torch
            from jobtools import request, wait_answer
            import segments
            before = set(sys.modules)
            torch.cuda._lazy_init()
            request("gpumon.request/1 map 3")
            wait_answer(3, timeout=2)
            try:
                torch.cuda._oom(0, 1 << 30, 1, 2)
            except torch.cuda.OutOfMemoryError as e:
                print("OOM:", e)
            import time; time.sleep(0.3)
            new = set(sys.modules) - before
            print(sorted(m for m in new if m.split(".")[0] != "_gpumon_probe"), file=sys.stderr)
            raise SystemExit(3)
        """)
        # without the hook the request is never answered: the job waits 2 s, prints the same
        done = self.assert_same_as_without(script, GPUMON_PROBE_RECORD="1")
        self.assertEqual(done.returncode, 3)
        self.assertIn(b"OOM: CUDA out of memory", done.stdout)
        # neither pickle, gzip nor json was imported; nothing but the probe's own parts
        self.assertEqual(done.stderr, b"[]\n")


class Requests(ProbeTest):
    """Every request gpumon must not be able to be tricked with, answered or ignored."""

    def job_with(self, setup):
        return self.fakes_job("""
            import os, time, stat
            from jobtools import wait_tick
            d = os.environ["GPUMON_PROBE_DIR"]
            name = os.path.join(d, "%%d.request" %% os.getpid())
            wait_tick()
            %s
            doc = wait_tick()
            doc = wait_tick()
            print(json.dumps([doc["answer"], os.path.exists(name) or os.path.islink(name),
                              doc["map_at_ms"]]))
        """ % setup)

    def answer(self, setup):
        answer, left, map_at = self.output_json(self.job_with(setup))
        self.assertFalse(left, "the request file was left behind")
        self.assertIsNone(map_at, "a map was taken for a refused request")
        return answer

    def write(self, data, mode=0o600):
        return """
            fd = os.open(name + ".tmp", os.O_WRONLY | os.O_CREAT, 0o%o)
            os.write(fd, %r)
            os.close(fd)
            os.chmod(name + ".tmp", 0o%o)
            os.replace(name + ".tmp", name)
        """ % (mode, data, mode)

    def test_a_symbolic_link_is_removed_and_its_target_left_alone(self):
        target = os.path.join(self.tmp, "target")
        with open(target, "w") as f:
            f.write("gpumon.request/1 map 1")
        os.chmod(target, 0o600)
        self.assertIsNone(self.answer("os.symlink(%r, name)" % target))
        with open(target) as f:
            self.assertEqual(f.read(), "gpumon.request/1 map 1")

    def test_readable_by_others_is_refused(self):
        self.assertEqual(self.answer(self.write(b"gpumon.request/1 map 2", 0o640)),
                         {"id": 2, "verb": "map", "ok": False,
                          "detail": "readable or writable by others (mode 640)"})

    def test_oversized_is_refused(self):
        self.assertEqual(self.answer(self.write(b"gpumon.request/1 map 3" + b" " * 200)),
                         {"id": 3, "verb": "map", "ok": False, "detail": "larger than 128 bytes"})

    def test_an_unknown_verb_runs_nothing(self):
        self.assertEqual(self.answer(self.write(b"gpumon.request/1 python 4")),
                         {"id": 4, "verb": "python", "ok": False, "detail": "unknown verb"})

    def test_a_bad_id_is_ignored(self):
        self.assertIsNone(self.answer(self.write(b"gpumon.request/1 map 1e3")))

    def test_a_fifo_does_not_block_the_probe(self):
        self.assertIsNone(self.answer("os.mkfifo(name, 0o600)"))

    @unittest.skipUnless(os.geteuid() == 0, "only root can give a file to another user")
    def test_another_owner_is_refused(self):
        setup = self.write(b"gpumon.request/1 map 6") + "\n            os.chown(name, 65534, 65534)"
        self.assertEqual(self.answer(setup),
                         {"id": 6, "verb": "map", "ok": False,
                          "detail": "owned by uid 65534, not by this process's user"})


class WithDriver(ProbeTest):
    def setUp(self):
        super().setUp()
        self.lib = fake_libcuda(self.tmp)
        if self.lib is None:
            self.skipTest("no C compiler to build the fake libcuda")

    def env(self, hook=True, **variables):
        variables.setdefault("FAKE_LIBCUDA", self.lib)
        variables.setdefault("GPUMON_PROBE_LIBCUDA", self.lib)
        variables.setdefault("FAKE_CUDA_ACTIVE", "01")
        return super().env(hook, **variables)

    def test_jax_sites_from_the_device_memory_profile_and_shapes_from_live_arrays(self):
        profile = pprof_encode.encode([
            ("cuda:0", 200, 200 * MiB, [("/venv/site-packages/jax/_src/numpy/lax_numpy.py", 5,
                                         "ones"), ("/home/u/jaxjob.py", 7, "make_cache")]),
            ("cuda:0", 1, 6 * MiB, [("/home/u/jaxjob.py", 12, "make_big")]),
            ("cuda:1", 1, MiB, [("/home/u/other.py", 1, "elsewhere")])])
        script = self.fakes_job("""
            import jax, types
            from jax._src import xla_bridge
            from jobtools import request, wait_answer, read_map
            from jax._src import profiler
            profiler._profile = %r
            del sys.modules["jax.profiler"]  # the job never imported it: the probe finds JAX's own

            class DType:
                def __init__(self, name, itemsize):
                    self.name, self.itemsize = name, itemsize

                def __str__(self):
                    return self.name

            class Array:
                def __init__(self, shape, dtype, itemsize, devices):
                    self.shape, self.dtype = shape, DType(dtype, itemsize)
                    self._devices = devices
                    self.sharding = types.SimpleNamespace(shard_shape=lambda s: (
                        (s[0] // len(devices),) + tuple(s[1:])))

                def devices(self):
                    return set(self._devices)

            class Device:  # hashable, as jax's devices are
                def __init__(self, i):
                    self.id = self.local_hardware_id = i

            devs = [Device(0), Device(1)]
            jax._live = [Array((256, 1024), "float32", 4, [devs[0]]) for _ in range(3)] + [
                Array((8, 512, 768), "bfloat16", 2, devs)]
            xla_bridge._init({0: {"bytes_in_use": 206 * %d, "pool_bytes": 1024 * %d,
                                  "largest_free_block_bytes": 800 * %d},
                              1: {"bytes_in_use": %d, "pool_bytes": 64 * %d}})
            request("gpumon.request/1 map 9")
            wait_answer(9)
            request("gpumon.request/1 export 10")
            time_ = __import__("time"); time_.sleep(5.1)
            request("gpumon.request/1 export 11")
            print(json.dumps([read_map(), wait_answer(11)["answer"], profiler.backends_asked]))
        """ % (profile, MiB, MiB, MiB, MiB, MiB))
        the_map, export, backends = self.output_json(script)
        d0, d1 = frameworks(the_map)["jax"]["devices"]
        self.assertEqual((d0["allocated"], d0["reserved"], d0["free"], d0["largest_free"]),
                         (206 * MiB, 1024 * MiB, 818 * MiB, 800 * MiB))
        self.assertEqual((d0["segments"], d0["segments_reason"]),
                         (None, "JAX's allocator gives no block map"))
        self.assertEqual(d0["sites"], [
            {"file": "/home/u/jaxjob.py", "line": 7, "function": "make_cache", "blocks": 200,
             "bytes": 200 * MiB},
            {"file": "/home/u/jaxjob.py", "line": 12, "function": "make_big", "blocks": 1,
             "bytes": 6 * MiB}])
        self.assertEqual([s["function"] for s in d1["sites"]], ["elsewhere"])
        self.assertEqual(d0["shapes"], [
            {"shape": "(256, 1024)", "dtype": "float32", "count": 3, "bytes": 3 << 20},
            {"shape": "(8, 512, 768)", "dtype": "bfloat16", "count": 1,
             "bytes": 4 * 512 * 768 * 2}])
        self.assertEqual(d1["shapes"][0]["bytes"], 4 * 512 * 768 * 2)  # its shard
        self.assertTrue(export["ok"], export)
        with open(os.path.join(self.probe_dir, export["detail"]), "rb") as f:
            self.assertEqual(f.read(), profile)
        self.assertIn("cuda", backends)

    def test_cupy_pool_figures_and_no_block_map(self):
        script = self.fakes_job("""
            import cupy
            from jobtools import request, wait_answer, read_map
            cupy._use({1: (786, 1572, 786, 0, 250)})
            request("gpumon.request/1 map 1")
            wait_answer(1)
            request("gpumon.request/1 record-on 2")
            print(json.dumps([read_map(), wait_answer(2)["answer"]]))
        """)
        the_map, record = self.output_json(script, FAKE_CUDA_ACTIVE="1")
        (dev,) = frameworks(the_map)["cupy"]["devices"]
        self.assertEqual((dev["index"], dev["allocated"], dev["reserved"], dev["free"],
                          dev["free_blocks"]), (1, 786, 1572, 786, 250))
        self.assertEqual(dev["segments_reason"], "CuPy's memory pool gives no block map")
        self.assertEqual((dev["sites"], dev["sites_reason"]),
                         (None, "CuPy records no allocation sites"))
        self.assertEqual((record["ok"], record["detail"]),
                         (False, "PyTorch is not loaded in this process"))


class TensorFlow(ProbeTest):
    def test_tensorflow_has_no_block_map(self):
        script = self.fakes_job("""
            import tensorflow
            from tensorflow.python.eager import context
            from jobtools import request, wait_answer, read_map
            context._init({0: {"current": 1234, "peak": 5678}})
            request("gpumon.request/1 map 1")
            wait_answer(1)
            print(json.dumps(read_map()))
        """)
        (dev,) = frameworks(self.output_json(script))["tensorflow"]["devices"]
        self.assertEqual((dev["allocated"], dev["segments"], dev["sites"]), (1234, None, None))
        self.assertIn("no block map", dev["segments_reason"])


if __name__ == "__main__":
    unittest.main()
