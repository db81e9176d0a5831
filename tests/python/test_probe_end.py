"""How a job ended, as its probe's last file says (``end``), with the job's exit status, stdout
and stderr the same with and without the probe; and where its main thread stands (``where``),
read against a known stack, when it stood still and when gpumon asked."""
import json
import os
import shutil
import sys
import unittest

from probe_harness import FAKES, ProbeTest, load_probe

# Each job ticks at least twice (100 ms interval) before it ends, so a file exists either way.
ENDS = {
    "normal": ("print('out'); print('err', file=sys.stderr)", 0),
    "sys_exit_3": ("print('leaving'); sys.exit(3)", 3),
    "oom": ("import torch\nraise torch.OutOfMemoryError("
            "'CUDA out of memory. Tried to allocate 2.00 GiB\\nsecond line')", 1),
    "os_exit_5": ("sys.stdout.flush(); os._exit(5)", 5),
    "sigterm": ("os.kill(os.getpid(), signal.SIGTERM); time.sleep(5)", -15),
    "sigkill": ("os.kill(os.getpid(), signal.SIGKILL); time.sleep(5)", -9),
}


class Ends(ProbeTest):
    def end_of(self, name):
        body, status = ENDS[name]
        script = self.job("import os, signal, sys, time\nsys.path.insert(0, %r)\n"
                          "time.sleep(0.3)\n%s\n" % (FAKES, body),
                          name + ".py")
        done = self.assert_same_as_without(script)
        self.assertEqual(done.returncode, status, done.stderr.decode())
        end = self.only_file()["end"]
        shutil.rmtree(self.probe_dir)
        return end

    def only_file(self):
        """The one probe file: only the run with the hook writes one."""
        files = [f for f in self.probe_files() if f.endswith(".json")]
        self.assertEqual(len(files), 1, files)
        with open(os.path.join(self.probe_dir, files[0])) as f:
            return json.load(f)

    def test_a_normal_end_and_sys_exit_are_exits_whose_status_is_not_known(self):
        for name in ("normal", "sys_exit_3"):
            end = self.end_of(name)
            self.assertEqual((end["how"], end["code"], end["exception"]), ("exit", None, None),
                             name)
            self.assertIsInstance(end["at_ms"], int)

    def test_an_uncaught_oom_is_recorded_with_its_qualified_type_and_first_line(self):
        end = self.end_of("oom")
        self.assertEqual(end["how"], "exception")
        self.assertEqual(end["code"], 1)
        self.assertEqual(end["exception"], {
            "type": "torch.OutOfMemoryError",
            "message": "CUDA out of memory. Tried to allocate 2.00 GiB"})

    def test_os_exit_and_signals_leave_no_end(self):
        for name in ("os_exit_5", "sigterm", "sigkill"):
            self.assertIsNone(self.end_of(name), name)

    def test_a_hook_the_job_calls_itself_is_no_end_and_a_hook_it_replaced_still_is(self):
        called = self.job("""
            import sys, time
            time.sleep(0.25)
            try:
                raise ValueError('shown, then the job goes on')
            except ValueError:
                sys.excepthook(*sys.exc_info())
            print('went on')
        """, "called.py")
        done = self.assert_same_as_without(called)
        self.assertIn(b"went on", done.stdout)
        self.assertEqual(self.only_file()["end"]["how"], "exit")
        os.remove(os.path.join(self.probe_dir, self.probe_files()[0]))
        replaced = self.job("""
            import sys, time
            sys.excepthook = lambda *a: print('own hook', a[0].__name__, file=sys.stderr)
            time.sleep(0.25)
            raise LookupError('\\x1b[31mred\\x07')
        """, "replaced.py")
        done = self.assert_same_as_without(replaced)
        self.assertEqual(done.stderr, b"own hook LookupError\n")
        end = self.only_file()["end"]
        self.assertEqual(end["exception"], {"type": "LookupError",
                                            "message": "\\x1b[31mred\\x07"})


class Where(ProbeTest):
    def test_a_main_thread_blocked_in_a_known_place_is_reported_once_still(self):
        script = self.job("""
            import json, os, threading, time
            def next_batch():
                threading.Event().wait(3.5)
            def report():
                with open(os.path.join(os.environ['GPUMON_PROBE_DIR'], '%d.json' % os.getpid())) as f:
                    doc = json.load(f)
                    print(json.dumps([doc['at_ms'], doc['where']]))
            threading.Timer(0.3, report).start()
            threading.Timer(3.0, report).start()
            started = time.time_ns() // 1000000
            next_batch()
            print(started)
        """, "blocked.py")
        done = self.run_ok(script, GPUMON_PROBE_STILL_S="1.5")
        early, late, started = done.stdout.decode().split("\n")[:3]
        at_ms, where = json.loads(early)
        if at_ms < int(started) + 1500:  # (a machine slow enough may read it later)
            self.assertIsNone(where, "not yet still for 1.5 s")
        where = json.loads(late)[1]
        self.assertFalse(where["asked"])
        frames = [(os.path.basename(f["file"]), f["line"], f["function"]) for f in where["frames"]]
        self.assertIn(("blocked.py", 4, "next_batch"), frames)
        self.assertEqual(frames[frames.index(("blocked.py", 4, "next_batch")) + 1],
                         ("blocked.py", 12, "<module>"))
        self.assertEqual(frames[0][2], "wait", "innermost first")
        self.assertLessEqual(len(frames), 8)
        self.assertGreaterEqual(where["since_ms"], int(started) - 200)
        self.assertGreaterEqual(where["at_ms"] - where["since_ms"], 1500)

    def test_a_busy_main_thread_is_not_reported(self):
        script = self.job("""
            import json, os, threading, time
            def spin(until):
                x = 0
                while time.monotonic() < until:
                    x += 1
            def report():
                with open(os.path.join(os.environ['GPUMON_PROBE_DIR'], '%d.json' % os.getpid())) as f:
                    print(json.dumps(json.load(f)['where']))
            threading.Timer(1.8, report).start()
            spin(time.monotonic() + 2.2)
        """, "busy.py")
        done = self.run_ok(script, GPUMON_PROBE_STILL_S="1")
        self.assertEqual(done.stdout, b"null\n")

    def test_where_asked_says_where_the_main_thread_is_now(self):
        script = self.fakes_job("""
            from jobtools import request, wait_answer
            def waiting():
                return wait_answer(7)
            request('gpumon.request/1 where 7')
            doc = waiting()
            print(json.dumps([doc['answer'], doc['where']]))
        """, "asked.py")
        answer, where = json.loads(self.run_ok(script).stdout)
        self.assertEqual(answer, {"id": 7, "verb": "where", "ok": True, "detail": ""})
        self.assertTrue(where["asked"])
        functions = [f["function"] for f in where["frames"]]
        self.assertIn("wait_answer", functions)
        self.assertEqual(functions[functions.index("wait_answer") + 1], "waiting")



class FakeCode:
    def __init__(self, name):
        self.co_filename, self.co_name = "/w/\x1b[2J%s.py" % name, name


class FakeFrame:
    def __init__(self, code, lasti, line, back=None):
        self.f_code, self.f_lasti, self.f_lineno, self.f_back = code, lasti, line, back


class WatchRules(unittest.TestCase):
    """The still rule on scripted frames and CPU times, in-process."""

    def watch(self, still_s="2"):
        os.environ["GPUMON_PROBE_STILL_S"] = still_s
        try:
            return sys.modules["_gpumon_probe.main_thread"].Watch()
        finally:
            del os.environ["GPUMON_PROBE_STILL_S"]

    @classmethod
    def setUpClass(cls):
        load_probe()

    def test_the_threshold_is_clamped_and_a_bad_one_is_ten_seconds(self):
        for given, ms in (("0.01", 1000), ("99999", 3600000), ("nan", 10000), ("x", 10000),
                          ("2.5", 2500)):
            self.assertEqual(self.watch(given).threshold_ms, ms, given)

    def test_still_only_when_the_stack_and_the_cpu_stand(self):
        w = self.watch()
        module = FakeFrame(FakeCode("train"), 10, 140)
        frames = {"at": FakeFrame(FakeCode("next_batch"), 4, 88, module)}
        cpu = {"ns": 0}
        w._frame, w._cpu = (lambda: frames["at"]), (lambda: cpu["ns"])
        reports = []
        for k in range(8):  # one tick a second; the CPU runs half the time from tick 1 to 3
            if 1 <= k <= 3:
                cpu["ns"] += 500000000
            now = 1000 * k
            reports.append(w.report(now, w.tick(now)))
        self.assertEqual(reports[:5], [None] * 5, "busy at one place is moving")
        where = reports[5]
        self.assertEqual((where["since_ms"], where["at_ms"], where["asked"]), (3000, 5000, False))
        self.assertEqual(where["frames"], [
            {"file": "/w/\\x1b[2Jnext_batch.py", "line": 88, "function": "next_batch"},
            {"file": "/w/\\x1b[2Jtrain.py", "line": 140, "function": "train"}])
        frames["at"] = FakeFrame(FakeCode("next_batch"), 6, 89, module)
        self.assertIsNone(w.report(8000, w.tick(8000)), "moved: another instruction")
        w.ask(8500)
        asked = [w.report(t, w.tick(t)) for t in (9000, 10000, 12000)]
        self.assertEqual([a is not None and a["asked"] for a in asked], [True, True, False])


if __name__ == "__main__":
    unittest.main()
