//! Fuzzing the OOM parsers: arbitrary bytes and mutated real messages never panic, and what comes
//! out is bounded (at most one failure per line, capped messages). `PROPTEST_CASES` sets the runs.

use gpumon::analysis::classify::classify;
use gpumon::analysis::context::Context;
use gpumon::analysis::remedy::remedy;
use gpumon::logs::lines::LineSplitter;
use gpumon::oom::sizes::parse_human;
use gpumon::oom::{MAX_MESSAGE, parse_all};
use proptest::prelude::*;

const REAL: &[&str] = &[
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 19.68 GiB. GPU 0 has a total capacity of 23.68 GiB of which 11.88 GiB is free. Including non-PyTorch memory, this process has 11.79 GiB memory in use. Of the allocated memory 11.44 GiB is allocated by PyTorch, and 43.59 MiB is reserved by PyTorch but unallocated.",
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 496.00 MiB. GPU 0 has a total capacty of 14.75 GiB of which 235.06 MiB is free. Process 20398 has 14.52 GiB memory in use. 40.00 GiB allowed; Of the allocated memory 14.06 GiB is allocated by PyTorch, with 4.00 GiB allocated in private pools (e.g., CUDA Graphs), and 330.42 MiB is reserved by PyTorch but unallocated.",
    "RuntimeError: CUDA out of memory. Tried to allocate 5.74 GiB (GPU 0; 5.50 GiB total capacity; 588.00 MiB already allocated; 4.13 GiB free; 1.00 GiB allowed; 588.00 MiB reserved in total by PyTorch)",
    "RuntimeError: CUDA out of memory. Tried to allocate 2.56 GiB (GPU 0; 15.90 GiB total capacity; 10.38 GiB already allocated; 1.83 GiB free; 2.99 GiB cached)",
    "RuntimeError: cuda runtime error (2) : out of memory at /pytorch/aten/src/THC/generic/THCStorage.cu:58",
    "W bfc_allocator.cc:485] Allocator (GPU_0_bfc) ran out of memory trying to allocate 3.07GiB (rounded to 3300000000)requested by op _EagerConst\nI bfc_allocator.cc:1068]   Size: 3.03GiB | Requested Size: 488.28MiB | in_use: 0 | bin_num: 20\nI bfc_allocator.cc:1109] Total bytes in pool: 40231108608 memory_limit_: 40231108608 available bytes: 0\nI bfc_allocator.cc:1114] Stats: \nLimit:                     40231108608\nInUse:                     31785630720\nLargestFreeBlock:          1.20GiB",
    "Allocator memory summary: rounded request 2.00GiB, total free in pool 3.10GiB, largest free chunk usable by high end 1.20GiB, unallocated bytes 0B, pool size 37.47GiB, pool limit 37.47GiB",
    "ResourceExhaustedError: OOM when allocating tensor with shape[4,2048,128,128] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
    "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 7406166528 bytes.",
    "RESOURCE_EXHAUSTED: Failed to allocate request for 154.06GiB (165425291480B) on device ordinal 0",
    "cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 512 bytes (allocated so far: 1,024 bytes, limit set to: 1,500 bytes).",
    "gpu_async_0 cuMemAllocAsync failed to allocate 4294967296 bytes: CUDA error\n Reported by CUDA: Free memory/Total memory: 1073741824/85899345920",
    "std::bad_alloc: cudaErrorMemoryAllocation: out of memory",
    // Distributed jobs' lines (shared/reference/distributed-jobs.md), rank prefixes included.
    "[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.",
    "[rank1]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3763, remote process exited or there was a network error, NCCL version 2.28.8",
    "node1:3018451:3018451 [0] enqueue.cc:1085 NCCL WARN Cuda failure 'out of memory'\n[rank0]: ncclUnhandledCudaError: Call to CUDA function failed.",
    "Failures:\n[1]:\n  time      : 2026-06-28_09:59:18\n  rank      : 1 (local_rank: 1)\n  exitcode  : -15 (pid: 1798)  (SIGTERM)\n------\nRoot Cause (first observed failure):\n[0]:\n  rank      : 0 (local_rank: 0)\n  exitcode  : 1 (pid: 1446)\n======",
    "E0801 13:23:20.000000 32974 api.py:874] failed (exitcode: 1) local_rank: 3 (pid: 33054) of binary: /usr/bin/python3",
    "srun: error: nid002888: tasks 0-57,59-63: Terminated\n*** STEP 52222788.0 ON nid002888 CANCELLED AT 2026-04-29T23:36:37 DUE TO TASK FAILURE ***",
    "[ERROR] [launch.py:321:sigkill_handler] ['python', '-u', 'main.py', '--local_rank=1'] exits with return code = -9",
    "UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):\n1\n/job:jax_worker/replica:0/task:3\nF client.h:86] Terminating process because the JAX distributed service detected fatal errors",
    "(WorkerDict pid=2837, ip=10.0.0.1) [rank3]: [default2]: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 8.00 GiB total capacity)",
    "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
];

/// Parses, classifies and explains everything in `log`, checking the bounds.
fn run(log: &[u8]) {
    let lines = log.iter().filter(|b| **b == b'\n').count() + 1;
    let found = parse_all(log);
    assert!(found.len() <= lines);
    for p in found {
        assert!(p.message.chars().count() <= MAX_MESSAGE);
        assert!(p.numbers.holders.len() <= 32);
        assert!(p.numbers.tensor.as_ref().is_none_or(|t| t.len() < 512));
        let f = p.into_failure(0, "fuzz.log", None);
        let ctx = Context::default();
        let v = classify(&f, &ctx);
        assert!(!remedy(&f, &v, &ctx).is_empty());
    }
}

fn mutated() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(REAL),
        prop::collection::vec((any::<usize>(), any::<u8>(), 0u8..4), 0..8),
        any::<usize>(),
    )
        .prop_map(|(msg, edits, cut)| {
            let mut b = msg.as_bytes().to_vec();
            for (at, byte, op) in edits {
                let i = at % (b.len() + 1);
                match op {
                    0 => b.insert(i, byte),
                    1 if i < b.len() => b[i] = byte,
                    2 if i < b.len() => {
                        b.remove(i);
                    }
                    _ if i < b.len() && b[i].is_ascii_digit() => b[i] = b'0' + byte % 10,
                    _ => {}
                }
            }
            if cut % 3 == 0 {
                b.truncate(cut % (b.len() + 1));
            }
            b
        })
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(log in prop::collection::vec(any::<u8>(), 0..4096)) {
        run(&log);
    }

    #[test]
    fn arbitrary_lines_never_panic(lines in prop::collection::vec("[ -~\\t\\x1b\\r]{0,200}", 0..20)) {
        run(lines.join("\n").as_bytes());
    }

    #[test]
    fn mutated_real_messages_never_panic(parts in prop::collection::vec(mutated(), 1..6)) {
        let log: Vec<u8> = parts.join(&b'\n');
        run(&log);
    }

    #[test]
    fn sizes_and_line_splitting_never_panic(text in "\\PC{0,40}", chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 0..10)) {
        let _ = parse_human(&text);
        let mut s = LineSplitter::default();
        let mut n = 0;
        for c in &chunks {
            s.push(c, |no, l| { assert!(no > n && l.len() <= 16 * 1024); n = no; });
        }
        s.finish(|no, _| assert!(no > n));
    }
}
