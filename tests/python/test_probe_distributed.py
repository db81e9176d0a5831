"""The probe's word on a process's rank (``distributed`` in ``<pid>.json``): read from fake
torch.distributed and JAX distributed state, never imported, only once the group exists, again
only when it changes; and a job that joins a group behaves the same with and without the probe."""
import os
import unittest

from probe_harness import ProbeTest

TORCH_RANK_1 = {"framework": "pytorch", "backend": "nccl", "rank": 1, "world_size": 2,
                "master": "10.0.0.1:29500", "run_id": "job-7"}


class Torch(ProbeTest):
    def test_read_once_the_group_exists_and_again_only_when_it_changes(self):
        script = self.fakes_job("""
            import os
            import torch.distributed as dist
            before = wait_tick()["distributed"]
            os.environ.update(MASTER_ADDR="10.0.0.1", MASTER_PORT="29500",
                              TORCHELASTIC_RUN_ID="job-7")
            dist.init_process_group("nccl", rank=1, world_size=2)
            first = wait_tick()["distributed"]
            wait_tick(); wait_tick()
            reads = dist.reads  # one read for the group, however many ticks
            dist.destroy_process_group()
            gone = wait_tick()["distributed"]
            os.environ.pop("MASTER_PORT")
            dist.init_process_group("gloo", rank=0, world_size=4)
            again = wait_tick()["distributed"]
            print(json.dumps([before, first, reads, gone, again, dist.reads]))
        """)
        before, first, reads, gone, again, reads_after = self.output_json(script)
        self.assertIsNone(before)
        self.assertEqual(first, TORCH_RANK_1)
        self.assertEqual(list(first), ["framework", "backend", "rank", "world_size", "master",
                                       "run_id"])
        self.assertEqual(reads, 1)
        self.assertIsNone(gone)
        self.assertEqual(again, {"framework": "pytorch", "backend": "gloo", "rank": 0,
                                 "world_size": 4, "master": None, "run_id": "job-7"})
        self.assertEqual(reads_after, 2)

    def test_a_module_still_being_imported_is_not_called(self):
        # the fake aborts the process if called while its import is under way
        script = self.fakes_job("""
            import torch.distributed as dist
            print(json.dumps(wait_tick()["distributed"]))
        """)
        self.assertIsNone(self.output_json(script, FAKE_DIST_IMPORT_DELAY="0.5"))

    def test_figures_that_lie_or_fail_are_null_and_the_rest_stay(self):
        script = self.fakes_job("""
            import torch.distributed as dist
            dist.init_process_group("nccl", rank=0, world_size=1)
            print(json.dumps(wait_tick()["distributed"]))
        """)
        for env, expected in (
                ({"FAKE_DIST_RANK": "-1"}, {"rank": None, "backend": "nccl"}),
                ({"FAKE_DIST_RANK": str(1 << 32)}, {"rank": None, "backend": "nccl"}),
                ({"FAKE_DIST_BACKEND": "raise"}, {"rank": 0, "backend": None})):
            doc = self.output_json(script, **env)
            self.assertEqual(doc, {"framework": "pytorch", "world_size": 1, "master": None,
                                   "run_id": None, **expected}, env)

    def test_a_fork_child_is_not_its_parents_rank(self):
        script = self.fakes_job("""
            import os
            import torch.distributed as dist
            dist.init_process_group("nccl", rank=3, world_size=8)
            wait_tick()
            pid = os.fork()
            if pid == 0:
                with open(os.environ["GPUMON_PROBE_DIR"] + "/child.out", "w") as f:
                    json.dump(wait_tick()["distributed"], f)
                os._exit(0)
            os.waitpid(pid, 0)
            print(json.dumps(wait_tick()["distributed"]))
        """)
        parent = self.output_json(script)
        self.assertEqual((parent["rank"], parent["world_size"]), (3, 8))
        with open(os.path.join(self.probe_dir, "child.out")) as f:
            self.assertIsNone(__import__("json").load(f))

    def test_a_job_that_joins_a_group_prints_and_exits_the_same_and_imports_nothing_new(self):
        script = self.fakes_job("""
            import os, sys, time
            before = set(sys.modules)
            import torch.distributed as dist
            os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29500")
            dist.init_process_group("nccl", rank=0, world_size=1)
            time.sleep(0.35)
            print("rank", dist.get_rank(), "of", dist.get_world_size())
            print("to stderr", file=sys.stderr)
            new = set(sys.modules) - before
            print(sorted(m for m in new if m.split(".")[0] != "_gpumon_probe"))
            dist.destroy_process_group()
            sys.exit(5)
        """)
        done = self.assert_same_as_without(script)
        self.assertEqual(done.returncode, 5)
        self.assertEqual(done.stdout.splitlines()[0], b"rank 0 of 1")
        self.assertIn(b"'torch.distributed'", done.stdout.splitlines()[1])  # and the same without
        (name,) = [n for n in self.probe_files() if n.endswith(".json")]
        doc = self.read_probe(int(name[:-5]))
        self.assertEqual(doc["distributed"], {"framework": "pytorch", "backend": "nccl",
                                              "rank": 0, "world_size": 1,
                                              "master": "127.0.0.1:29500", "run_id": None})


class Jax(ProbeTest):
    def test_the_distributed_state_once_its_client_has_connected(self):
        # jax.process_index() aborts in the fake: the probe reads attributes only
        script = self.fakes_job("""
            import jax
            from jax._src import distributed
            before = wait_tick()["distributed"]
            distributed.global_state.initialize("10.0.0.1:1234", 2, 1)
            during = wait_tick()["distributed"]
            distributed.global_state.shutdown()
            print(json.dumps([before, during, wait_tick()["distributed"]]))
        """)
        before, during, after = self.output_json(script)
        self.assertIsNone(before)
        self.assertEqual(during, {"framework": "jax", "backend": None, "rank": 1,
                                  "world_size": 2, "master": "10.0.0.1:1234", "run_id": None})
        self.assertIsNone(after)


if __name__ == "__main__":
    unittest.main()
