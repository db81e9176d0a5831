//! An OOM at the end of a leak is named a leak with the leak remedy, from NVML's device memory
//! alone when the process runs without the probe; one large request after flat memory is not.

use crate::analysis::test_pools::{Second, T0, run};
use crate::model::{Alert, Level};
use crate::oom::parse_all;
use crate::sample::Framework;
use crate::source::scripted::build::{GIB, MIB, gpu, process};

/// An unprobed PyTorch job (pid 430) alone on an 80 GiB GPU whose device memory follows
/// `held(second)` for `secs` seconds, failing at the last one with `oom`.
fn unprobed(secs: u64, held: impl Fn(u64) -> u64, oom: &str) -> Alert {
    run((0..secs).map(|k| {
        let h = held(k);
        let g = gpu(0, 80 * GIB, (h + 300 * MIB).min(80 * GIB), 0);
        let p = process(430, &g, h, Framework::Pytorch, "python3 train.py");
        let at = T0 + k * 1000;
        let failures = if k + 1 == secs {
            vec![
                parse_all(oom.as_bytes())
                    .remove(0)
                    .into_failure(at, "train.out", Some(430)),
            ]
        } else {
            Vec::new()
        };
        Second {
            failures,
            ..(g, vec![p]).into()
        }
    }))
    .into_iter()
    .rfind(|a| a.level == Level::Failure)
    .expect("a failure alert")
}

const FULL: &str = "CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 212.00 MiB is free. Of the allocated memory 77.50 GiB is allocated by PyTorch, and 10.00 MiB is reserved by PyTorch but unallocated.";

#[test]
fn an_unprobed_leak_to_a_full_gpu_is_named_a_leak_with_the_leak_remedy() {
    // 1 GiB more every step (a step a second), never released, until the GPU is full.
    let a = unprobed(76, |k| 2 * GIB + k * GIB, FULL);
    assert_eq!(a.class, "device-full");
    assert!(
        a.title
            .starts_with("pid 430 PyTorch OOM: device-full after a leak"),
        "{}",
        a.title
    );
    assert!(
        a.evidence[0].starts_with("a leak: its device memory (NVML; no allocator probe) rose from"),
        "{:?}",
        a.evidence
    );
    let remedy = a.remedy.as_deref().unwrap();
    assert!(
        remedy.starts_with("Find what keeps memory alive from step to step in pid 430"),
        "{remedy}"
    );
    assert!(!remedy.contains("Reduce the batch"), "{remedy}");
}

#[test]
fn one_large_request_after_flat_memory_is_not_a_leak() {
    // 40 GiB held for a minute, then a request the GPU cannot give.
    let oom = "CUDA out of memory. Tried to allocate 60.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 38.00 GiB is free. Of the allocated memory 39.50 GiB is allocated by PyTorch, and 10.00 MiB is reserved by PyTorch but unallocated.";
    let a = unprobed(
        70,
        |k| if k < 3 { (k + 1) * 10 * GIB } else { 40 * GIB },
        oom,
    );
    assert_eq!(a.class, "device-full");
    assert!(!a.title.contains("leak"), "{}", a.title);
    assert!(
        a.remedy.as_deref().unwrap().starts_with("Reduce the batch"),
        "{:?}",
        a.remedy
    );
    // A warm-up that climbed and then plateaued a minute before the failure: no leak either.
    let a = unprobed(130, |k| (4 + k.min(30)) * GIB, oom);
    assert!(!a.title.contains("leak"), "{}", a.title);
}
