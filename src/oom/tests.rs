//! Whole-log tests of the streaming parser: one failure per event, noise ignored, bad bytes survived.

use super::sizes::{Size, parse_human};
use super::*;
use detect::worth_parsing;

const TF_LOG: &str = "\
2023-08-01 10:00:00.000000: W tensorflow/tsl/framework/bfc_allocator.cc:485] Allocator (GPU_0_bfc) ran out of memory trying to allocate 3.07GiB (rounded to 3300000000)requested by op _EagerConst
If the cause is memory fragmentation maybe the environment variable 'TF_GPU_ALLOCATOR=cuda_malloc_async' will improve the situation. 
Current allocation summary follows.
Current allocation summary follows.
2023-08-01 10:00:00.000001: I tensorflow/tsl/framework/bfc_allocator.cc:1039] BFCAllocator dump for GPU_0_bfc
2023-08-01 10:00:00.000002: I tensorflow/tsl/framework/bfc_allocator.cc:1046] Bin (268435456): \tTotal Chunks: 9, Chunks in use: 6. 36.75GiB allocated for chunks. 29.19GiB in use in bin. 29.19GiB client-requested in use in bin.
2023-08-01 10:00:00.000003: I tensorflow/tsl/framework/bfc_allocator.cc:1062] Bin for 3.07GiB was 256.00MiB, Chunk State: 
2023-08-01 10:00:00.000004: I tensorflow/tsl/framework/bfc_allocator.cc:1068]   Size: 1.75GiB | Requested Size: 392.00MiB | in_use: 0 | bin_num: 20, prev:   Size: 786.78MiB | Requested Size: 786.78MiB | in_use: 1 | bin_num: -1, next:   Size: 256B | Requested Size: 8B | in_use: 1 | bin_num: -1
2023-08-01 10:00:00.000005: I tensorflow/tsl/framework/bfc_allocator.cc:1068]   Size: 2.78GiB | Requested Size: 128B | in_use: 0 | bin_num: 20, prev: ...
2023-08-01 10:00:00.000006: I tensorflow/tsl/framework/bfc_allocator.cc:1068]   Size: 3.03GiB | Requested Size: 488.28MiB | in_use: 0 | bin_num: 20, prev: ...
2023-08-01 10:00:00.000007: I tensorflow/tsl/framework/bfc_allocator.cc:1075] Next region of size 40231108608
2023-08-01 10:00:00.000008: I tensorflow/tsl/framework/bfc_allocator.cc:1095] InUse at 7f41b2000000 of size 256 next 1
2023-08-01 10:00:00.000009: I tensorflow/tsl/framework/bfc_allocator.cc:1103] 1 Chunks of size 3300000000 totalling 3.07GiB
2023-08-01 10:00:00.000010: I tensorflow/tsl/framework/bfc_allocator.cc:1107] Sum Total of in-use chunks: 29.60GiB
2023-08-01 10:00:00.000011: I tensorflow/tsl/framework/bfc_allocator.cc:1109] Total bytes in pool: 40231108608 memory_limit_: 40231108608 available bytes: 0 curr_region_allocation_bytes_: 80462217216
2023-08-01 10:00:00.000012: I tensorflow/tsl/framework/bfc_allocator.cc:1114] Stats: 
Limit:                     40231108608
InUse:                     31785630720
MaxInUse:                  37595815424
NumAllocs:                    21974606
MaxAllocSize:              13200000000
Reserved:                            0
PeakReserved:                        0
LargestFreeBlock:                    0

2023-08-01 10:00:00.000013: W tensorflow/tsl/framework/bfc_allocator.cc:497] **_______***____*****______________________________________________________________________******
2023-08-01 10:00:00.000014: W tensorflow/core/framework/op_kernel.cc:1828] OP_REQUIRES failed at constant_op.cc:81 : RESOURCE_EXHAUSTED: OOM when allocating tensor with shape[825000000] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc
Traceback (most recent call last):
  File \"train.py\", line 10, in <module>
tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[825000000] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc
";

#[test]
fn tf_header_dump_and_error_are_one_failure() {
    let out = parse_all(TF_LOG.as_bytes());
    assert_eq!(out.len(), 1, "{out:#?}");
    let f = &out[0];
    assert_eq!(f.line, 1);
    assert_eq!(f.dialect, Some(Dialect::Tensorflow));
    assert!(f.message.starts_with("Allocator (GPU_0_bfc) ran out"));
    let n = &f.numbers;
    assert_eq!(n.request, Some(Size::exact(3_300_000_000)));
    assert_eq!(n.pool, Some(Size::exact(40_231_108_608)));
    assert_eq!(n.in_use, Some(Size::exact(31_785_630_720)));
    assert_eq!(n.largest_free, parse_human("3.03GiB"));
    assert_eq!(n.tensor.as_deref(), Some("shape[825000000] float"));
    assert_eq!(n.device, Some(0));
}

#[test]
fn error_after_the_window_is_still_the_same_failure() {
    let mut log = TF_LOG.replace("Traceback (most recent call last):\n", "");
    let filler = "  File \"keras/engine.py\", line 1, in fit\n".repeat(150);
    log = log.replace(
        "tensorflow.python.framework.errors_impl",
        &format!("{filler}tensorflow.python.framework.errors_impl"),
    );
    assert_eq!(parse_all(log.as_bytes()).len(), 1);
}

#[test]
fn jax_dump_then_error_printed_twice() {
    let log = "\
W external/xla/xla/tsl/framework/bfc_allocator.cc:512] Allocator (GPU_0_bfc) ran out of memory trying to allocate 6.90GiB (rounded to 7406166528)requested by op 
I external/xla/xla/tsl/framework/bfc_allocator.cc:1109] Total bytes in pool: 60129542144 memory_limit_: 60129542144 available bytes: 0 curr_region_allocation_bytes_: 120259084288
I external/xla/xla/tsl/framework/bfc_allocator.cc:1114] Stats: 
Limit:                     60129542144
InUse:                     57000000000
E0528 12:00:00.000000 1 pjrt_stream_executor_client.cc:2826] Execution of replica 0 failed: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 7406166528 bytes.
BufferAssignment OOM Debugging.
BufferAssignment stats:
  preallocated temp fragmentation:     2.0KiB (0.00%)
              total fragmentation:    1.73GiB (4.37%)
Traceback (most recent call last):
jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 7406166528 bytes.
";
    let out = parse_all(log.as_bytes());
    assert_eq!(out.len(), 1, "{out:#?}");
    assert_eq!(out[0].dialect, Some(Dialect::Jax));
    assert_eq!(out[0].numbers.in_use, Some(Size::exact(57_000_000_000)));
    let bare = "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 10 bytes.\nx\nXlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 10 bytes.\n";
    assert_eq!(parse_all(bare.as_bytes()).len(), 1);
}

#[test]
fn jax_0_11_header_occupancy_and_error_are_one_jax_failure() {
    let log = include_str!("../../tests/fixtures/logs/jax-pool-limit.log");
    let out = parse_all(log.as_bytes());
    assert_eq!(out.len(), 1, "{out:#?}");
    let f = &out[0];
    assert_eq!((f.line, f.dialect), (2, Some(Dialect::Jax)));
    assert_eq!(f.allocator, Some(Allocator::Bfc));
    let n = &f.numbers;
    assert_eq!(n.request, Some(Size::exact(1_200_000_000)));
    assert_eq!(n.device, Some(0));
    assert_eq!(n.op.as_deref(), Some("jit_broadcast_in_dim"));
    let o = n.occupancy.unwrap();
    assert_eq!((o.used_pct, o.free_pct, o.free_runs), (71, 29, 1));
    let alone = log.lines().last().unwrap();
    let out = parse_all(alone.as_bytes());
    assert_eq!(out[0].numbers.request, parse_human("1.12GiB"));
    assert_eq!(out[0].dialect, Some(Dialect::Jax));
}

#[test]
fn pytorch_repeated_is_one_and_two_different_are_two() {
    let m = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.00 GiB is free.";
    let log = format!("{m}\nduring handling\n{m}\n");
    assert_eq!(parse_all(log.as_bytes()).len(), 1);
    // A rank's failure said again without its prefix (relayed) is the same failure; an
    // unprefixed failure and then a rank's are two (the first one's writer is not known).
    let log = format!("[rank0]: {m}\nduring handling\n{m}\n");
    assert_eq!(parse_all(log.as_bytes()).len(), 1);
    let log = format!("{m}\nduring handling\n[rank0]: {m}\n");
    assert_eq!(parse_all(log.as_bytes()).len(), 2);
    let other = m.replace("2.00 GiB.", "4.00 GiB.");
    let log = format!("{m}\n{other}\n");
    assert_eq!(parse_all(log.as_bytes()).len(), 2);
}

#[test]
fn raw_error_joins_a_nearby_failure() {
    let log = "RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported at some other API call\nRuntimeError: CUDA error: out of memory\n";
    let out = parse_all(log.as_bytes());
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].dialect, Some(Dialect::Cuda));
    assert_eq!(out[0].message, "RuntimeError: CUDA error: out of memory");
}

#[test]
fn non_failures_are_ignored() {
    let log = "\
W bfc_allocator.cc:243] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.25GiB with freed_by_count=0. The caller indicates that this is not a failure, but may mean that there could be performance gains if more memory were available.
W bfc_allocator.cc:100] Garbage collection: deallocate free memory regions (i.e., allocations) so that we can re-allocate a larger region to avoid OOM due to memory fragmentation. Set TF_ENABLE_GPU_GARBAGE_COLLECTION=false if you'd like to disable this feature.
I tensorflow/stream_executor/cuda/cuda_driver.cc:775] failed to allocate 256.00M (268435456 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory
I tensorflow/stream_executor/cuda/cuda_driver.cc:775] failed to allocate 230.40M (241591910 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory
BufferAssignment OOM Debugging.
              total fragmentation:    1.73GiB (4.37%)
cudaMallocHost failed: cudaErrorMemoryAllocation: out of memory
If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.
";
    assert_eq!(parse_all(log.as_bytes()), vec![]);
}

#[test]
fn crlf_ansi_and_invalid_utf8() {
    let mut log = b"\x1b[31mRuntimeError: CUDA out of memory. Tried to allocate 2.56 GiB (GPU 0; 15.90 GiB total capacity; 10.38 GiB already allocated; 1.83 GiB free; 2.99 GiB cached)\x1b[0m\r\n".to_vec();
    log.extend_from_slice(b"\xff\xfe\x00garbage\r\n");
    log.extend_from_slice(b"cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 1,024 bytes \xc3(allocated so far: 2,048 bytes).\r\n");
    let out = parse_all(&log);
    assert_eq!(out.len(), 2, "{out:#?}");
    assert_eq!(out[0].numbers.cached, parse_human("2.99 GiB"));
    assert!(out[0].message.ends_with("2.99 GiB cached)"));
    assert_eq!(out[1].line, 3);
    assert_eq!(out[1].numbers.request, Some(Size::exact(1024)));
}

#[test]
fn huge_line_is_cut_and_survived() {
    let mut log = vec![b'x'; 2 << 20];
    log.extend_from_slice(b"\nRuntimeError: CUDA error: out of memory\n");
    let out = parse_all(&log);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].line, 2);
    let long = format!(
        "CUDA out of memory. Tried to allocate 1.00 GiB.{}",
        "z".repeat(3 << 20)
    );
    let out = parse_all(long.as_bytes());
    assert_eq!(out[0].message.chars().count(), MAX_MESSAGE);
}

#[test]
fn interleaved_processes_keep_their_own_failures() {
    let log = "\
[rank1] W bfc_allocator.cc:485] Allocator (GPU_1_bfc) ran out of memory trying to allocate 1.00GiB (rounded to 1073741824)requested by op x
[rank0] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.10 GiB of which 0 bytes is free.
[rank1] I bfc_allocator.cc:1109] Total bytes in pool: 8589934592 memory_limit_: 8589934592 available bytes: 0 curr_region_allocation_bytes_: 1
[rank0] epoch 1 loss 0.3
[rank1] ResourceExhaustedError: OOM when allocating tensor with shape[268435456] and type float on /device:GPU:1 by allocator GPU_1_bfc
";
    let out = parse_all(log.as_bytes());
    assert_eq!(out.len(), 2, "{out:#?}");
    assert_eq!(out[0].dialect, Some(Dialect::Pytorch));
    assert_eq!(out[1].numbers.pool, Some(Size::exact(8_589_934_592)));
    assert_eq!(
        out[1].numbers.tensor.as_deref(),
        Some("shape[268435456] float")
    );
}

#[test]
fn window_closes_after_idle_lines_and_on_flush() {
    let mut p = OomParser::new();
    let mut out = Vec::new();
    p.feed(1, b"Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00GiB (rounded to 1073741824)", &mut out);
    for i in 0..=u64::from(IDLE_LINES) {
        p.feed(2 + i, b"unrelated", &mut out);
    }
    assert_eq!(out.len(), 1);
    p.feed(
        100,
        b"cuMemAllocAsync failed to allocate 4096 bytes",
        &mut out,
    );
    p.flush(&mut out);
    assert_eq!(out.len(), 2);
    assert_eq!(out[1].allocator, Some(Allocator::CudaAsync));
}

#[test]
fn the_prefilter_keeps_every_wording_in_any_case_and_drops_the_rest() {
    for line in [
        "RuntimeError: CUDA out of MEMORY.",
        "Resource exhausted: OOM when allocating tensor",
        "failed to Alloc 2GiB",
        "cudaErrorMemoryAllocation",
    ] {
        assert!(worth_parsing(line), "{line}");
    }
    for line in ["epoch 3 loss 0.25", "", "mem", "allo c", "oo m"] {
        assert!(!worth_parsing(line), "{line}");
    }
}

#[test]
fn a_jobs_own_lines_about_its_memory_are_no_failure_and_skip_the_patterns() {
    // A DDP job's JSON line a step on 2 H200s (scripts/gpu/dist/ddp_job.py): "allocated" and
    // "ooms" pass the word screen, but none of the phrases a wording holds is there.
    let line = r#"{"ev":"step","rank":0,"step":4211,"allocated":1388241920,"reserved":6377439232,"stranded":864099328,"ooms":0,"t":1795813690.662}"#;
    assert!(super::detect::worth_parsing(line));
    assert!(super::detect::detect(line).is_none());
    let text = format!("{line}\n").repeat(1000);
    assert!(parse_all(text.as_bytes()).is_empty());
}

/// Issue 40: a request printed as thousands of digits is found, called unreadable (saying what
/// it held), and the rest of the message is read; every dialect alike (`runs.rs`).
#[test]
fn a_request_of_thousands_of_digits_is_unreadable_and_the_rest_is_read() {
    let digits = "1".repeat(16_000);
    let line = format!(
        "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {digits} GiB. GPU 2 \
         has a total capacity of 79.19 GiB of which 1.00 GiB is free. Process 4242 has 78.00 GiB \
         memory in use. Of the allocated memory 70.00 GiB is allocated by PyTorch, and 2.00 GiB \
         is reserved by PyTorch but unallocated."
    );
    assert!(line.len() < MAX_LINE);
    let out = parse_all(line.as_bytes());
    assert_eq!(out.len(), 1, "{out:#?}");
    let (p, n) = (&out[0], &out[0].numbers);
    assert_eq!((p.dialect, p.rank), (Some(Dialect::Pytorch), Some(3)));
    assert!(
        p.message
            .starts_with("CUDA out of memory. Tried to allocate 1111")
    );
    assert_eq!(n.request, None);
    assert_eq!(
        n.request_unreadable.as_deref(),
        Some("1111111111111111… (16000 characters) GiB")
    );
    assert_eq!((n.device, n.total), (Some(2), parse_human("79.19 GiB")));
    assert_eq!(n.free, parse_human("1.00 GiB"));
    assert_eq!(n.allocated, parse_human("70.00 GiB"));
    assert_eq!(n.cached, parse_human("2.00 GiB"));
    assert_eq!(n.holders[0].pid, Some(4242));
    // Cut by the line's cap inside the number: still PyTorch's OOM, its request unreadable.
    let cut =
        format!("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {digits}{digits}");
    let out = parse_all(cut.as_bytes());
    assert_eq!(out.len(), 1, "{out:#?}");
    assert!(
        out[0]
            .numbers
            .request_unreadable
            .as_deref()
            .unwrap()
            .starts_with("1111")
    );
    // A number that is long but no run (digits between words) is read as before.
    let ok = "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 8.00 GiB of which 0 bytes is free.";
    assert_eq!(
        parse_all(ok.as_bytes())[0].numbers.request,
        parse_human("2.00 GiB")
    );
}

#[test]
fn every_dialect_reads_a_run_as_no_size() {
    let run = "9".repeat(5_000);
    for (line, dialect) in [
        (
            format!(
                "W tensorflow/tsl/framework/bfc_allocator.cc:485] Allocator (GPU_1_bfc) ran out of memory trying to allocate {run}GiB requested by op Conv"
            ),
            Dialect::Tensorflow,
        ),
        (
            format!(
                "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate {run} bytes."
            ),
            Dialect::Jax,
        ),
        (
            format!(
                "RESOURCE_EXHAUSTED: Failed to allocate request for 1GiB ({run}B) on device ordinal 0"
            ),
            Dialect::Jax,
        ),
        (
            format!(
                "cupy.cuda.memory.OutOfMemoryError: Out of memory allocating {run} bytes (allocated so far: 1,024 bytes)."
            ),
            Dialect::Cupy,
        ),
        (
            format!(
                "h:1:1 [0] enqueue.cc:1 NCCL WARN Cuda failure 'out of memory'\nh:1:1 [0] alloc.h:185 NCCL WARN Failed to CUDA calloc {run} bytes"
            ),
            Dialect::Nccl,
        ),
        (
            format!(
                "GPU_0 cuMemAllocAsync failed to allocate {run} bytes: CUDA error: out of memory (CUDA_ERROR_OUT_OF_MEMORY)"
            ),
            Dialect::Tensorflow,
        ),
    ] {
        let out = parse_all(line.as_bytes());
        assert_eq!(out.len(), 1, "{dialect:?}: {out:#?}");
        let n = &out[0].numbers;
        assert_eq!(
            (out[0].dialect, n.request),
            (Some(dialect), None),
            "{line:.80}"
        );
        let said = n.request_unreadable.as_deref().unwrap_or_default();
        assert!(
            said.starts_with("9999999999999999… (5000 characters)"),
            "{dialect:?}: {said}"
        );
    }
}
