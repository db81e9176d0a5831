"""Runs test jobs in real Python subprocesses, with and without the gpumon probe hook."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
HOOK_DIR = os.path.join(REPO, "python", "gpumon", "probe")
FAKES = os.path.join(HERE, "fakes")


class ProbeTest(unittest.TestCase):
    """A temporary directory per test; ``self.probe_dir`` is where the hook writes."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gpumon-probe-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.probe_dir = os.path.join(self.tmp, "run", "probe")

    def env(self, hook=True, probe_dir=None, extra_path=(), **variables):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GPUMON_", "PYTHON", "FAKE_"))}
        path = ([HOOK_DIR] if hook else []) + list(extra_path)
        if path:
            env["PYTHONPATH"] = os.pathsep.join(path)
        env["GPUMON_PROBE_DIR"] = probe_dir if probe_dir is not None else self.probe_dir
        env["GPUMON_PROBE_INTERVAL_MS"] = "100"
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ in the repository
        env.update(variables)
        return {k: v for k, v in env.items() if v is not None}

    def job(self, code, name="job.py"):
        """Writes a job script (same path for every run of it) and returns its path."""
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(textwrap.dedent(code))
        return path

    def run_job(self, script, hook=True, **env):
        return subprocess.run([sys.executable, script], env=self.env(hook, **env),
                              capture_output=True, timeout=60)

    def assert_same_as_without(self, script, **env):
        """Runs the job with and without the hook; stdout, stderr and exit status must match."""
        plain = self.run_job(script, hook=False, **env)
        hooked = self.run_job(script, hook=True, **env)
        self.assertEqual(hooked.stdout, plain.stdout)
        self.assertEqual(hooked.stderr, plain.stderr)
        self.assertEqual(hooked.returncode, plain.returncode)
        return hooked

    def fakes_job(self, body, name="job.py"):
        """A job that can import the fake frameworks and jobtools.wait_tick()."""
        prelude = "import json, sys\nsys.path.insert(0, %r)\nfrom jobtools import wait_tick\n" % FAKES
        return self.job(prelude + textwrap.dedent(body), name)

    def run_ok(self, script, **env):
        done = self.run_job(script, **env)
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        self.assertEqual(done.stderr, b"")
        return done

    def output_json(self, script, **env):
        return json.loads(self.run_ok(script, **env).stdout)

    def probe_files(self):
        try:
            return sorted(os.listdir(self.probe_dir))
        except FileNotFoundError:
            return []

    def read_probe(self, pid):
        with open(os.path.join(self.probe_dir, "%d.json" % pid)) as f:
            return json.load(f)

    def wait_for_files(self, count, timeout=5.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(self.probe_files()) < count:
            time.sleep(0.02)
        return self.probe_files()


def load_probe():
    """The probe's package (``_gpumon_probe`` beside the hook), loaded as the hook loads it and
    never started, with its parts imported: for unit tests of its functions."""
    import importlib
    import importlib.util
    sys.dont_write_bytecode = True  # no __pycache__ in the repository
    if "_gpumon_probe" not in sys.modules:
        where = os.path.join(HOOK_DIR, "_gpumon_probe")
        spec = importlib.util.spec_from_file_location(
            "_gpumon_probe", os.path.join(where, "__init__.py"), submodule_search_locations=[where])
        package = importlib.util.module_from_spec(spec)
        sys.modules["_gpumon_probe"] = package
        spec.loader.exec_module(package)
    for name in PARTS:
        importlib.import_module("_gpumon_probe." + name)
    return sys.modules["_gpumon_probe"]


# Every part of the probe's package, by file name.
PARTS = sorted(n[:-3] for n in os.listdir(os.path.join(HOOK_DIR, "_gpumon_probe"))
               if n.endswith(".py") and n != "__init__.py")


def frameworks(doc):
    return {f["name"]: f for f in doc["frameworks"]}


def fake_libcuda(directory):
    """Compiles tests/python/fakes/libcuda_fake.c into ``directory``; None without a C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    out = os.path.join(directory, "libcuda_fake.so")
    subprocess.run([cc, "-shared", "-fPIC", "-o", out, os.path.join(FAKES, "libcuda_fake.c")],
                   check=True, capture_output=True, timeout=60)
    return out
