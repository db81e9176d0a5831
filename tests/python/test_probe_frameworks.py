"""The probe's figures from fake torch, jax, cupy and tensorflow modules, before and after they
initialise a device; the CUDA driver is a fake libcuda built from tests/python/fakes."""
import os
import unittest

from probe_harness import ProbeTest, fake_libcuda, frameworks

MiB = 1 << 20
TORCH_STATS = {
    "allocated_bytes.all.current": 300 * MiB, "reserved_bytes.all.current": 1000 * MiB,
    "inactive_split_bytes.all.current": 600 * MiB, "allocated_bytes.all.peak": 900 * MiB,
    "reserved_bytes.all.peak": 1200 * MiB, "num_alloc_retries": 2, "num_ooms": 1,
}
JAX_STATS = {
    "bytes_in_use": 786 * MiB, "peak_bytes_in_use": 900 * MiB, "largest_alloc_size": 8 * MiB,
    "bytes_limit": 25500 * MiB, "bytes_reserved": 0, "peak_bytes_reserved": 0,
    "largest_free_block_bytes": 23900 * MiB, "pool_bytes": 25500 * MiB,
    "peak_pool_bytes": 25500 * MiB, "num_allocs": 1500,
}
NULLS = dict.fromkeys(["stranded", "largest_free_block", "largest_alloc", "limit",
                       "peak_allocated", "peak_reserved", "alloc_retries", "ooms"])


def uuid_of(ordinal):
    """The UUID the fake driver gives ``ordinal``: bytes ordinal*16 .. ordinal*16+15."""
    h = bytes(range(ordinal * 16, ordinal * 16 + 16)).hex()
    return "GPU-%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


class Torch(ProbeTest):
    def test_nothing_before_init_then_the_allocator_figures(self):
        script = self.fakes_job("""
            import torch
            before = wait_tick()
            torch.cuda._fraction = {0: 0.5}
            torch.cuda._snapshot = [
                {"device": 0, "blocks": [{"state": "inactive", "size": 8 << 20},
                                         {"state": "active_allocated", "size": 64 << 20}]},
                {"device": 0, "blocks": [{"state": "inactive", "size": 12 << 20}]}]
            torch.cuda._stats = {0: %r}
            torch.cuda._initialized = True
            after = wait_tick()
            print(json.dumps([before, after, torch.cuda._snapshot_calls]))
        """ % TORCH_STATS)
        before, after, snapshots = self.output_json(script)
        self.assertEqual(frameworks(before)["pytorch"],
                         {"name": "pytorch", "version": "2.11.0+fake", "error": None, "devices": []})
        (dev,) = frameworks(after)["pytorch"]["devices"]  # device 1 was never used
        self.assertEqual(dev, {
            "index": 0, "uuid": "GPU-fd6139b1-8d5e-4f1c-9d2a-000000000000",
            "allocated": 300 * MiB, "reserved": 1000 * MiB, "cached_free": 700 * MiB,
            "stranded": 600 * MiB, "largest_free_block": 12 * MiB, "largest_alloc": None,
            "limit": 40 * 2**30, "peak_allocated": 900 * MiB, "peak_reserved": 1200 * MiB,
            "alloc_retries": 2, "ooms": 1})
        self.assertEqual(snapshots, 1)  # at most every 10 s

    def test_no_snapshot_while_little_is_stranded(self):
        stats = dict(TORCH_STATS, **{"inactive_split_bytes.all.current": 255 * MiB})
        script = self.fakes_job("""
            import torch
            torch.cuda._stats = {1: %r}
            torch.cuda._initialized = True
            print(json.dumps([wait_tick(), torch.cuda._snapshot_calls]))
        """ % stats)
        doc, snapshots = self.output_json(script)
        (dev,) = frameworks(doc)["pytorch"]["devices"]
        self.assertEqual((dev["index"], dev["largest_free_block"], dev["limit"]), (1, None, None))
        self.assertEqual(snapshots, 0)

    def test_under_expandable_segments_the_snapshot_follows_cached_free(self):
        # inactive_split_bytes stays 0 under expandable segments: 700 MiB cached free decides.
        stats = dict(TORCH_STATS, **{"inactive_split_bytes.all.current": 0})
        script = self.fakes_job("""
            import torch
            torch.cuda._snapshot = [
                {"device": 1, "blocks": [{"state": "inactive", "size": 8 << 20},
                                         {"state": "active_allocated", "size": 8 << 20},
                                         {"state": "inactive", "size": 8 << 20}]}]
            torch.cuda._stats = {1: %r}
            torch.cuda._initialized = True
            print(json.dumps([wait_tick(), torch.cuda._snapshot_calls]))
        """ % stats)
        for conf, snapshots, largest in (("expandable_segments:True", 1, 8 * MiB),
                                         ("max_split_size_mb:128", 0, None)):
            with self.subTest(conf=conf):
                doc, calls = self.output_json(script, PYTORCH_CUDA_ALLOC_CONF=conf)
                (dev,) = frameworks(doc)["pytorch"]["devices"]
                self.assertEqual((dev["stranded"], dev["largest_free_block"], calls),
                                 (0, largest, snapshots))

    def test_a_failing_stats_call_is_recorded_and_the_job_sees_nothing(self):
        script = self.fakes_job("""
            import torch, time
            torch.cuda._initialized = True
            torch.cuda._fail = "CUDA error: an illegal memory access was encountered"
            time.sleep(0.35)
            print("job output")
            raise SystemExit(4)
        """)
        done = self.assert_same_as_without(script)
        self.assertEqual((done.returncode, done.stdout), (4, b"job output\n"))
        (name,) = self.probe_files()
        torch = frameworks(self.read_probe(int(name[:-5])))["pytorch"]
        self.assertEqual(torch["error"], "RuntimeError: CUDA error: an illegal memory access "
                                         "was encountered")
        self.assertEqual(torch["devices"], [])


class WithDriver(ProbeTest):
    """Jobs whose framework loads (fake) libcuda, as JAX and CuPy load the real one."""

    def setUp(self):
        super().setUp()
        self.lib = fake_libcuda(self.tmp)
        if self.lib is None:
            self.skipTest("no C compiler to build the fake libcuda")

    def env(self, hook=True, **variables):
        variables.setdefault("FAKE_LIBCUDA", self.lib)
        variables.setdefault("GPUMON_PROBE_LIBCUDA", self.lib)
        return super().env(hook, **variables)

    def test_jax_only_after_its_gpu_backend_exists(self):
        script = self.fakes_job("""
            import jax
            from jax._src import xla_bridge
            before = wait_tick()
            xla_bridge._backends["cpu"] = xla_bridge.Backend([])
            cpu_only = wait_tick()
            xla_bridge._init({0: %r, 1: None})
            print(json.dumps([before, cpu_only, wait_tick()]))
        """ % JAX_STATS)
        before, cpu_only, after = self.output_json(script, FAKE_CUDA_ACTIVE="01")
        for doc in (before, cpu_only):
            self.assertEqual(frameworks(doc)["jax"]["devices"], [])
        jax = frameworks(after)["jax"]
        self.assertEqual((jax["version"], jax["error"]), ("0.11.2+fake", None))
        self.assertEqual(jax["devices"], [
            {"index": 0, "uuid": uuid_of(0), "allocated": 786 * MiB, "reserved": 25500 * MiB,
             "cached_free": 24714 * MiB, "stranded": None, "largest_free_block": 23900 * MiB,
             "largest_alloc": 8 * MiB, "limit": 25500 * MiB, "peak_allocated": 900 * MiB,
             "peak_reserved": 25500 * MiB, "alloc_retries": None, "ooms": None},
            dict(NULLS, index=1, uuid=uuid_of(1), allocated=None, reserved=None,
                 cached_free=None)])  # XLA_PYTHON_CLIENT_ALLOCATOR=platform: no stats

    def test_jax_without_its_private_backends_table_says_so(self):
        script = self.fakes_job("""
            import jax
            from jax._src import xla_bridge
            del xla_bridge._backends
            print(json.dumps(wait_tick()))
        """)
        jax = frameworks(self.output_json(script))["jax"]
        self.assertEqual(jax["devices"], [])
        self.assertIn("jax._src.xla_bridge._backends not found", jax["error"])

    def test_cupy_reads_only_devices_whose_context_exists(self):
        script = self.fakes_job("""
            import cupy
            before = wait_tick()
            cupy._use({1: (786, 1572, 786, 0), 0: (5, 10, 5, 99)})
            after = wait_tick()
            print(json.dumps([before, after, sorted(set(cupy.cuda.runtime.switched_to))]))
        """)
        before, after, switched = self.output_json(script, FAKE_CUDA_ACTIVE="1")
        self.assertEqual(frameworks(before)["cupy"]["devices"], [])
        self.assertEqual(frameworks(after)["cupy"]["devices"], [
            dict(NULLS, index=1, uuid=uuid_of(1), allocated=786, reserved=1572, cached_free=786)])
        self.assertEqual(switched, [1])  # never to device 0: that would create a context

    def test_cupy_limit_and_an_empty_pool(self):
        script = self.fakes_job("""
            import cupy
            cupy._use({0: (0, 0, 0, 0), 1: (1, 2048, 2047, 4096)})
            print(json.dumps(wait_tick()))
        """)
        (dev,) = frameworks(self.output_json(script, FAKE_CUDA_ACTIVE="01"))["cupy"]["devices"]
        self.assertEqual((dev["index"], dev["limit"], dev["cached_free"]), (1, 4096, 2047))

    def test_a_forked_child_does_not_report_the_parents_pool(self):
        script = self.fakes_job("""
            import cupy, os
            cupy._use({0: (786, 1572, 786, 0)})
            wait_tick()
            pid = os.fork()
            if pid == 0:
                with open(os.environ["GPUMON_PROBE_DIR"] + "/child.out", "w") as f:
                    json.dump(wait_tick(), f)
                os._exit(0)
            os.waitpid(pid, 0)
            print(json.dumps(wait_tick()))
        """)
        parent = self.output_json(script, FAKE_CUDA_ACTIVE="0")
        self.assertEqual(len(frameworks(parent)["cupy"]["devices"]), 1)
        with open(os.path.join(self.probe_dir, "child.out")) as f:
            child = frameworks(__import__("json").load(f))["cupy"]
        self.assertEqual(child["devices"], [])
        self.assertIn("forked from a process that had initialised CUDA", child["error"])


class TensorFlow(ProbeTest):
    def test_only_once_its_context_is_initialised(self):
        script = self.fakes_job("""
            import tensorflow
            from tensorflow.python.eager import context
            before = wait_tick()
            context._init({0: {"current": 1234, "peak": 5678}})
            print(json.dumps([before, wait_tick()]))
        """)
        before, after = self.output_json(script)
        self.assertEqual(frameworks(before)["tensorflow"]["devices"], [])
        self.assertEqual(frameworks(after)["tensorflow"]["devices"], [
            dict(NULLS, index=0, uuid=None, allocated=1234, reserved=None, cached_free=None,
                 peak_allocated=5678)])


if __name__ == "__main__":
    unittest.main()
