//! Whole-log tests of ranks sharing one log: each rank's windows and repeats are its own.

use crate::oom::dist::{Dist, NcclCause};
use crate::oom::failure::Dialect;
use crate::oom::parse_all;

const OOM: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.00 GiB is free.";

#[test]
fn two_ranks_identical_ooms_are_two_failures() {
    let log = format!("[rank0]: {OOM}\n[rank1]: {OOM}\n[rank0]: {OOM}\n[default1]: {OOM}\n");
    let out = parse_all(log.as_bytes());
    let who: Vec<(Option<u32>, Option<u32>)> = out.iter().map(|p| (p.rank, p.local_rank)).collect();
    assert_eq!(who, vec![(Some(0), None), (Some(1), None), (None, Some(1))]);
    assert_eq!(out[0].prefix.as_deref(), Some("[rank0]:"));
    assert!(
        out[0].message.starts_with("CUDA out of memory"),
        "{}",
        out[0].message
    );
}

#[test]
fn interleaved_ranks_do_not_close_each_others_windows() {
    // A TF/XLA dump on rank 0 whose error line comes after rank 1 printed more than a window's
    // worth of lines of its own.
    let mut log = String::from(
        "[rank0]: W external/xla/xla/tsl/framework/bfc_allocator.cc:512] Allocator (GPU_0_bfc) ran out of memory trying to allocate 6.90GiB (rounded to 7406166528)requested by op \n",
    );
    for i in 0..100 {
        log.push_str(&format!("[rank1]: step {i} loss 2.0\n"));
    }
    log.push_str("[rank0]: I external/xla/xla/tsl/framework/bfc_allocator.cc:1109] Total bytes in pool: 60129542144 memory_limit_: 60129542144 available bytes: 0 curr_region_allocation_bytes_: 120259084288\n");
    let out = parse_all(log.as_bytes());
    assert_eq!(out.len(), 1, "{out:#?}");
    assert_eq!(out[0].rank, Some(0));
    assert_eq!(out[0].numbers.pool.map(|s| s.bytes), Some(60_129_542_144));
}

#[test]
fn a_nccl_oom_lends_its_rank_from_the_error_that_follows() {
    // Open-Sora-Plan#386 and nccl#1410's wording: NCCL's own line (no prefix), then PyTorch's
    // error on rank 2.
    let log = "\
node1:3018453:3024011 [2] enqueue.cc:1085 NCCL WARN Cuda failure 'out of memory'
node1:3018453:3024011 [2] include/alloc.h:185 NCCL WARN Failed to CUDA calloc 6291456 bytes
[rank2]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5
[rank2]: ncclUnhandledCudaError: Call to CUDA function failed.
";
    let out = parse_all(log.as_bytes());
    assert_eq!(out.len(), 1, "{out:#?}");
    assert_eq!(out[0].dialect, Some(Dialect::Nccl));
    assert_eq!(out[0].dist, None);
    assert_eq!(out[0].rank, Some(2));
    assert_eq!(out[0].numbers.request.map(|s| s.bytes), Some(6_291_456));
    // The other order: PyTorch's error, then `Last error:` and the OOM.
    let log = "\
[rank7]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5
[rank7]: ncclUnhandledCudaError: Call to CUDA function failed.
[rank7]: Last error:
[rank7]: Cuda failure 2 'out of memory'
";
    let out = parse_all(log.as_bytes());
    assert_eq!(out.len(), 1, "{out:#?}");
    assert_eq!((out[0].rank, out[0].dist.is_none()), (Some(7), true));
    // Not after an OOM: a CUDA error of its own.
    let out = parse_all(b"[rank7]: ncclUnhandledCudaError: Call to CUDA function failed.\n[rank7]: Last error:\n[rank7]: Cuda failure 1 'invalid argument'\n");
    assert!(matches!(
        out[0].dist,
        Some(Dist::NcclError {
            cause: NcclCause::Cuda,
            ..
        })
    ));
}

#[test]
fn a_rank_quoted_in_torchruns_summary_is_no_new_failure() {
    let log = format!(
        "[rank0]: {OOM}\nFailures:\n  <NO_OTHER_FAILURES>\n------\nRoot Cause (first observed failure):\n[0]:\n  time      : 2026-11-21_06:05:04\n  host      : gpu-07\n  rank      : 0 (local_rank: 0)\n  exitcode  : 1 (pid: 1446)\n  error_file: /tmp/torchelastic_x/0/error.json\n  traceback : Traceback (most recent call last):\n    File \"train.py\", line 9, in <module>\n  {OOM}\n======\n"
    );
    let out = parse_all(log.as_bytes());
    assert_eq!(out.len(), 2, "{out:#?}");
    assert!(out[0].dist.is_none());
    assert!(matches!(
        out[1].dist,
        Some(Dist::Torchrun {
            root: true,
            pid: Some(1446),
            ..
        })
    ));
    assert_eq!(out[1].rank, Some(0));
}

#[test]
fn garbage_and_absurd_prefixes_are_survived() {
    let log = format!(
        "[rank99999999999]: {OOM}\n[rank3]:\u{1b}[31m\u{0}\u{7}garbage ###\n[rank3]: \n[default]: {}\n",
        OOM.replace("2.00 GiB.", "4.00 GiB.")
    );
    let out = parse_all(log.as_bytes());
    assert_eq!(out.len(), 2, "{out:#?}");
    assert_eq!((out[0].rank, out[0].local_rank), (None, None));
    assert_eq!(out[0].prefix.as_deref(), Some("[rank99999999999]:"));
    assert_eq!((out[1].rank, out[1].prefix.as_deref()), (None, None));
}

#[test]
fn many_ranks_keep_bounded_lanes() {
    let mut log = String::new();
    for r in 0..300 {
        log.push_str(&format!("[rank{r}]: {OOM}\n"));
    }
    assert_eq!(parse_all(log.as_bytes()).len(), 300);
}
