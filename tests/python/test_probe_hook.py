"""The probe hook from the job's side: chaining, silence, exit status, files, fork and failures."""
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import unittest

from probe_harness import HOOK_DIR, ProbeTest

HOOK_IMPORTS = """
import sys
before = set(sys.modules)
import threading, atexit, time
print(sorted(set(sys.modules) - before))
"""


class Chaining(ProbeTest):
    def shadowed(self, body):
        other = os.path.join(self.tmp, "site-other")
        os.mkdir(other)
        with open(os.path.join(other, "sitecustomize.py"), "w") as f:
            f.write(body)
        return other

    def test_runs_the_shadowed_sitecustomize_as_sitecustomize(self):
        other = self.shadowed("import os\nMARKER = 'shadowed'\nos.environ['SHADOWED_RAN'] = '1'\n")
        script = self.job("""
            import os, sys, time
            time.sleep(0.3)
            m = sys.modules['sitecustomize']
            print(m.__name__, m.MARKER, m.__file__, m.__spec__.origin, os.environ.get('SHADOWED_RAN'))
            import sitecustomize
            print(sitecustomize is m)
        """)
        done = self.assert_same_as_without(script, extra_path=[other])
        self.assertIn(b"sitecustomize shadowed", done.stdout)
        self.assertTrue(self.wait_for_files(1), "the probe did not start after chaining")

    def test_a_failing_shadowed_sitecustomize_fails_as_without_gpumon(self):
        other = self.shadowed("PARTIAL = 1\nraise ValueError('broken site config')\n")
        script = self.job("import sys, time\ntime.sleep(0.3)\nprint('sitecustomize' in sys.modules)\n")
        done = self.assert_same_as_without(script, extra_path=[other])
        self.assertIn(b"Error in sitecustomize", done.stderr)
        self.assertIn(b"ValueError: broken site config", done.stderr)
        self.assertTrue(self.wait_for_files(1), "the probe did not start after a failing chain")

    def test_without_a_shadowed_one_no_sitecustomize_is_left(self):
        script = self.job("""
            import sys
            print('sitecustomize' in sys.modules)
            try:
                import sitecustomize
            except ImportError as e:
                print(type(e).__name__, e.name, e)
            import threading
            print(sum(t.name == 'gpumon-probe' for t in threading.enumerate()) <= 1)
        """)
        self.assert_same_as_without(script)

    def test_a_second_copy_of_the_hook_starts_no_second_thread(self):
        # gpumon run inside gpumon run: another copy of the hook later on PYTHONPATH, which runs
        # first (chained to) and loads its own package; the first copy finds it loaded.
        other = os.path.join(self.tmp, "other-hook")
        shutil.copytree(HOOK_DIR, other, ignore=shutil.ignore_patterns("__pycache__"))
        script = self.job("""
            import sys, threading
            print([t.name for t in threading.enumerate()])
            print(sys.modules['_gpumon_probe'].__file__)
        """)
        done = self.run_ok(script, extra_path=[HOOK_DIR, other], GPUMON_PROBE_HOOK_DIR=HOOK_DIR)
        threads, package = done.stdout.decode().splitlines()
        self.assertEqual(threads.count("gpumon-probe"), 1)
        self.assertTrue(package.startswith(os.path.realpath(other)), package)


class Silence(ProbeTest):
    def test_output_and_exit_status_are_unchanged(self):
        script = self.job("""
            import sys, time
            print('out'); print('err', file=sys.stderr)
            time.sleep(0.25)
            sys.exit(3)
        """)
        self.assertEqual(self.assert_same_as_without(script).returncode, 3)

    def test_an_uncaught_exception_looks_the_same(self):
        script = self.job("import time\ntime.sleep(0.15)\nraise KeyError('job failed')\n")
        self.assertEqual(self.assert_same_as_without(script).returncode, 1)

    def test_forking_gives_no_multithreading_warning(self):
        script = self.job("""
            import os, time, warnings
            warnings.simplefilter('always')
            time.sleep(0.15)
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0)
            print('forked')
        """)
        self.assert_same_as_without(script)

    def test_only_the_announced_stdlib_modules_are_imported(self):
        baseline = self.run_ok(self.job(HOOK_IMPORTS, "imports.py"), hook=False).stdout
        allowed = set(eval(baseline))  # what importing threading, atexit and time adds here
        script = self.job("""
            import sys, time
            time.sleep(0.3)
            print(sorted(sys.modules))
        """)
        plain = set(eval(self.run_ok(script, hook=False).stdout))
        hooked = set(eval(self.run_ok(script).stdout))
        probe = {m for m in hooked if m.split(".")[0] == "_gpumon_probe"}
        self.assertLessEqual(hooked - plain - probe, allowed | {"threading", "atexit", "time"})
        self.assertFalse({"torch", "jax", "cupy", "tensorflow", "ctypes", "json"} & hooked)
        # at start-up only the parts that run a tick with no framework loaded
        self.assertEqual(probe, {"_gpumon_probe", "_gpumon_probe.lifecycle", "_gpumon_probe.probe",
                                 "_gpumon_probe.files", "_gpumon_probe.common",
                                 "_gpumon_probe.ending", "_gpumon_probe.main_thread"})

    def test_the_probe_is_seen_only_under_its_private_name_and_only_when_it_runs(self):
        script = self.job("""
            import os, sys, time
            time.sleep(0.3)
            hook = os.path.realpath(sys.argv[1]) + os.sep
            print(sorted(name for name, m in list(sys.modules.items())
                         if os.path.realpath(getattr(m, "__file__", None) or "/").startswith(hook)))
        """)
        started = ("['_gpumon_probe', '_gpumon_probe.common', '_gpumon_probe.ending', "
                   "'_gpumon_probe.files', '_gpumon_probe.lifecycle', '_gpumon_probe.main_thread', "
                   "'_gpumon_probe.probe']")
        for probe_dir, expected in ((None, started), ("", "[]")):
            done = subprocess.run([sys.executable, script, HOOK_DIR], capture_output=True,
                                  env=self.env(probe_dir=probe_dir), timeout=60)
            self.assertEqual((done.returncode, done.stderr), (0, b""), probe_dir)
            self.assertEqual(done.stdout.decode().strip(), expected, probe_dir)

    def test_a_package_of_the_same_name_on_the_path_is_not_taken_for_the_probe(self):
        # a job's own _gpumon_probe, even one before the hook on sys.path, is never loaded by it
        other = os.path.join(self.tmp, "elsewhere")
        os.makedirs(os.path.join(other, "_gpumon_probe"))
        with open(os.path.join(other, "_gpumon_probe", "__init__.py"), "w") as f:
            f.write("import sys\nprint('the wrong package', file=sys.stderr)\n")
        script = self.job("""
            import sys, time
            time.sleep(0.3)
            print(sys.modules['_gpumon_probe'].__file__.endswith('probe/_gpumon_probe/__init__.py'))
        """)
        env = self.env()
        env["PYTHONPATH"] = os.pathsep.join([other, HOOK_DIR])
        done = subprocess.run([sys.executable, script], env=env, capture_output=True, timeout=60)
        self.assertEqual((done.stdout, done.stderr, done.returncode), (b"True\n", b"", 0))
        self.assertEqual(len(self.wait_for_files(1)), 1)


class Files(ProbeTest):
    def test_one_atomic_private_file_per_process(self):
        script = self.job("import os, time\ntime.sleep(0.35)\nprint(os.getpid())\n")
        pid = int(self.run_ok(script).stdout)
        self.assertEqual(self.probe_files(), ["%d.json" % pid])  # and no temp file left
        for path in (self.probe_dir, os.path.dirname(self.probe_dir)):
            self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o700)
        path = os.path.join(self.probe_dir, "%d.json" % pid)
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        doc = self.read_probe(pid)
        self.assertEqual(list(doc), ["schema", "pid", "start_time", "at_ms", "interval_ms",
                                     "python", "stopped", "frameworks", "answer",
                                     "recording", "map_at_ms", "distributed", "end", "where"])
        self.assertEqual((doc["schema"], doc["pid"], doc["interval_ms"], doc["stopped"]),
                         ("gpumon.probe/1", pid, 100, None))
        self.assertEqual(doc["python"], "%d.%d.%d" % sys.version_info[:3])
        self.assertLessEqual(doc["start_time"], doc["at_ms"] // 1000)
        self.assertGreater(doc["start_time"], doc["at_ms"] // 1000 - 60)
        self.assertEqual(doc["frameworks"], [])
        self.assertEqual((doc["answer"], doc["recording"], doc["map_at_ms"], doc["distributed"]),
                         (None, None, None, None))

    def test_an_existing_directory_keeps_its_mode(self):
        os.makedirs(self.probe_dir, 0o755)
        os.chmod(self.probe_dir, 0o755)
        self.run_ok(self.job("import time\ntime.sleep(0.25)\n"))
        self.assertEqual(stat.S_IMODE(os.stat(self.probe_dir).st_mode), 0o755)
        self.assertEqual(len(self.probe_files()), 1)

    def test_interval_is_clamped(self):
        script = self.job("import time\ntime.sleep(0.25)\n")
        for given, used in (("5", 100), ("junk", 1000), ("999999", 60000)):
            self.run_ok(script, GPUMON_PROBE_INTERVAL_MS=given)
            (name,) = self.probe_files()
            self.assertEqual(self.read_probe(int(name[:-5]))["interval_ms"], used, given)
            os.unlink(os.path.join(self.probe_dir, name))

    def test_no_directory_or_disabled_means_no_thread_and_no_file(self):
        script = self.job("""
            import threading, time
            time.sleep(0.3)
            print([t.name for t in threading.enumerate()])
        """)
        for env in ({"probe_dir": ""}, {"GPUMON_PROBE_DISABLE": "1"}):
            done = self.run_ok(script, **env)
            self.assertEqual(done.stdout, b"['MainThread']\n", env)
        self.assertEqual(self.probe_files(), [])

    def test_a_symlinked_probe_directory_is_refused(self):
        real = os.path.join(self.tmp, "elsewhere")
        os.mkdir(real, 0o700)
        os.makedirs(os.path.dirname(self.probe_dir))
        os.symlink(real, self.probe_dir)
        self.run_ok(self.job("import time\ntime.sleep(0.3)\n"))
        self.assertEqual(os.listdir(real), [])


class Processes(ProbeTest):
    def test_children_write_their_own_files(self):
        script = self.job("""
            import multiprocessing as mp, os, sys, time
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            from mpchild import child
            if __name__ == '__main__':
                pids = []
                for method in ('spawn', 'fork', 'forkserver'):
                    ctx = mp.get_context(method)
                    q = ctx.Queue()
                    p = ctx.Process(target=child, args=(q,))
                    p.start()
                    pids.append(q.get(timeout=30))
                    p.join(30)
                time.sleep(0.2)
                print(os.getpid(), *pids)
        """)
        # The fork and forkserver children leave through os._exit, which no exit handler sees:
        # one that left in the middle of a write would leave its temp file (docs/probe-format.md;
        # gpumon removes it). So each leaves just after a write, 100 ms before the next.
        self.job("""
            import os, time
            def child(q):
                path = os.path.join(os.environ["GPUMON_PROBE_DIR"], "%d.json" % os.getpid())
                def written():
                    try:
                        st = os.stat(path)
                        return st.st_ino, st.st_mtime_ns  # each write is a new file renamed
                    except OSError:
                        return None
                time.sleep(0.25)
                first, deadline = written(), time.monotonic() + 5
                while written() == first and time.monotonic() < deadline:
                    time.sleep(0.002)
                q.put(os.getpid())
        """, "mpchild.py")
        pids = [int(p) for p in self.run_ok(script).stdout.split()]
        files = self.probe_files()
        for pid in pids:
            self.assertIn("%d.json" % pid, files)
            self.assertEqual(self.read_probe(pid)["pid"], pid)
        self.assertFalse([f for f in files if f.endswith(".tmp")])

    def test_os_fork_child_and_parent_both_keep_writing(self):
        script = self.job("""
            import os, time, threading
            def probe_threads():  # in the parent, Python 3.13+ restarts it a moment later
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline:
                    names = [t.name for t in threading.enumerate()]
                    if 'gpumon-probe' in names:
                        break
                    time.sleep(0.01)
                return names
            time.sleep(0.15)
            pid = os.fork()
            names = probe_threads()
            time.sleep(0.3)
            if pid == 0:
                os._exit(0 if names.count('gpumon-probe') == 1 else 9)
            _, status = os.waitpid(pid, 0)
            print(os.getpid(), pid, status, names.count('gpumon-probe'))
        """)
        parent, child, status, threads = map(int, self.run_ok(script).stdout.split())
        self.assertEqual((status, threads), (0, 1))
        self.assertEqual(self.read_probe(child)["pid"], child)
        self.assertEqual(self.read_probe(parent)["pid"], parent)


class Failures(ProbeTest):
    STOPS = """
        import threading, time
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(
                t.name == 'gpumon-probe' for t in threading.enumerate()):
            time.sleep(0.02)
        print('probe running:', any(t.name == 'gpumon-probe' for t in threading.enumerate()))
    """

    def test_a_directory_that_cannot_exist_stops_the_probe_quietly(self):
        blocker = os.path.join(self.tmp, "a-file")
        open(blocker, "w").close()
        done = self.run_ok(self.job(self.STOPS), probe_dir=os.path.join(blocker, "probe"))
        self.assertEqual(done.stdout, b"probe running: False\n")

    def test_a_full_disk_leaves_no_temp_file(self):
        # RLIMIT_FSIZE makes every write fail (EFBIG) the way a full disk would (ENOSPC).
        script = self.job(textwrap.dedent("""
            import resource, signal
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (8, 8))
        """) + textwrap.dedent(self.STOPS))
        done = self.assert_same_as_without(script)
        self.assertEqual(done.stdout, b"probe running: False\n")
        self.assertFalse([f for f in self.probe_files() if f.endswith(".tmp")])

    @unittest.skipIf(os.geteuid() == 0, "root writes into a read-only directory anyway")
    def test_a_read_only_directory_stops_the_probe(self):
        os.makedirs(self.probe_dir, 0o500)
        done = self.run_ok(self.job(self.STOPS))
        self.assertEqual(done.stdout, b"probe running: False\n")

    def test_a_failing_write_in_a_subprocess_tree_keeps_exit_statuses(self):
        script = self.job("""
            import subprocess, sys
            sys.exit(subprocess.run([sys.executable, '-c', 'import sys; sys.exit(7)']).returncode)
        """)
        blocker = os.path.join(self.tmp, "a-file")
        open(blocker, "w").close()
        done = subprocess.run([sys.executable, script], capture_output=True, timeout=60,
                              env=self.env(probe_dir=os.path.join(blocker, "probe")))
        self.assertEqual((done.returncode, done.stdout, done.stderr), (7, b"", b""))


if __name__ == "__main__":
    unittest.main()
