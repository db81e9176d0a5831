//! The growth rules on scripted probe sequences: a leak, cache growth over flat allocated, a
//! fragmentation that builds (under expandable segments too), one jump, in-step temporaries, and
//! each kind of limit.

use super::*;
use crate::analysis::test_pools::torch;
use crate::model::{GpuTrack, PoolHistory, ProcessTrack, Ring};
use crate::sample::{Framework, GpuSample, Pool, Reading};
use crate::source::scripted::build::{GIB, MIB, gpu, process};

fn track(sample: GpuSample) -> GpuTrack {
    GpuTrack {
        sample,
        segments: None,
        used: Ring::new(600),
        lost_since_ms: None,
        total: None,
        unattributed: 0,
        alerts: 0,
        infos: 0,
        troubles: Vec::new(),
        xids: Default::default(),
        util: None,
    }
}

/// A process whose pool follows `f(second)` for `secs` seconds on an 80 GiB GPU with `free`.
fn run(secs: u64, free: u64, f: impl Fn(u64) -> Pool) -> (ProcessTrack, GpuTrack, Pool) {
    let g = gpu(0, 80 * GIB, 80 * GIB - free, 0);
    let sample = |k: u64| {
        let mut p = process(7, &g, GIB, Framework::Pytorch, "python3 train.py");
        p.pool = Reading::Value(f(k));
        p
    };
    let at = |k: u64| 1_000_000 + k * 1000;
    let mut t = ProcessTrack::new(&sample(0), at(0), 600);
    for k in 0..secs {
        t.observe(sample(k), at(k));
    }
    (t, track(g), f(secs - 1))
}

fn now(secs: u64) -> u64 {
    1_000_000 + (secs - 1) * 1000
}

#[test]
fn a_leak_under_a_cap_is_warned_with_its_cap_and_time() {
    // 200 MiB more every second, nothing released, under a 9.5 GiB cap.
    let cap = 9 * GIB + GIB / 2;
    let (t, g, last) = run(20, 70 * GIB, |k| {
        let a = GIB + k * 200 * MIB;
        torch(a, a + 100 * MIB, 50 * MIB, None, Some(cap))
    });
    let r = risk(&t, &last, &g, now(20)).expect("a leak");
    assert_eq!(r.class, "leak");
    assert!(r.title.contains("9.50 GiB cap"), "{}", r.title);
    assert!(r.evidence.iter().any(|e| e.contains("nothing released")));
    assert!(r.remedy.contains("keeps memory alive"));
}

#[test]
fn cache_growth_over_flat_allocated_is_never_a_warning() {
    // The pool grows 2 GiB a second toward a full GPU; allocated stays at 1 GiB.
    let (t, g, last) = run(38, 2 * GIB, |k| {
        torch(GIB, GIB + k * 2 * GIB, 80 * MIB, None, None)
    });
    assert!(risk(&t, &last, &g, now(38)).is_none());
}

#[test]
fn a_leak_that_fragments_is_a_leak_first() {
    // Allocated climbs 120 MiB a second with nothing released, and its kept blocks strand 60 MiB
    // more a second: a leak, whatever the stranded share; fragmentation second, with the time
    // expandable segments would buy.
    let (t, g, last) = run(20, 70 * GIB, |k| {
        let a = GIB + k * 120 * MIB;
        let s = 200 * MIB + k * 60 * MIB;
        torch(a, a + s, s, None, Some(8 * GIB))
    });
    let r = risk(&t, &last, &g, now(20)).expect("a leak");
    assert_eq!(r.class, "leak");
    assert!(
        r.title
            .starts_with("pid 7 torch leaks +120M/s: reaches its 8.00 GiB cap")
            && r.title.ends_with(" stranded in split blocks too"),
        "{}",
        r.title
    );
    let second = r
        .evidence
        .iter()
        .find(|e| e.starts_with("fragmentation second: the blocks it keeps split the pool, "))
        .unwrap_or_else(|| panic!("{:#?}", r.evidence));
    assert!(
        second.ends_with("all PYTORCH_ALLOC_CONF=expandable_segments:True would buy"),
        "{second}"
    );
    assert!(
        r.remedy.starts_with("Find what keeps memory alive"),
        "{}",
        r.remedy
    );
    assert!(
        r.remedy.contains("(Fragmentation comes second: PYTORCH_ALLOC_CONF=expandable_segments:True would only buy about 1"),
        "{}",
        r.remedy
    );
}

#[test]
fn stranded_memory_that_grows_over_flat_allocated_is_a_fragmentation_that_builds() {
    // Allocated flat at 3 GiB (its steps' temporaries come and go); the pool grows by what its
    // split blocks strand, 90 MiB a second.
    let (t, g, last) = run(20, 70 * GIB, |k| {
        let a = 3 * GIB + (k % 3) * 100 * MIB;
        let s = 200 * MIB + k * 90 * MIB;
        torch(a, a + s, s, None, Some(6 * GIB))
    });
    let r = risk(&t, &last, &g, now(20)).expect("a fragmentation that builds");
    assert_eq!(r.class, "fragmentation-risk");
    assert!(r.remedy.contains("expandable_segments"), "{}", r.remedy);
}

#[test]
fn one_jump_then_flat_is_not_a_climb() {
    let (t, g, last) = run(20, 70 * GIB, |k| {
        let a = if k < 8 { 100 * MIB } else { 3 * GIB };
        torch(a, a, 0, None, None)
    });
    assert!(risk(&t, &last, &g, now(20)).is_none());
}

#[test]
fn in_step_temporaries_are_not_a_leak() {
    // Allocated read at any moment of a step: 1 GiB between steps, up to 5 GiB inside one.
    let (t, g, last) = run(40, 70 * GIB, |k| {
        let a = GIB + (k * 7919 % 5) * GIB;
        torch(a, 7 * GIB, 100 * MIB, None, Some(10 * GIB))
    });
    assert!(risk(&t, &last, &g, now(40)).is_none());
}

#[test]
fn the_gpu_binds_first_when_its_free_memory_is_nearer_than_the_cap() {
    let g = track(gpu(0, 80 * GIB, 78 * GIB, 0));
    let l = binding(&torch(4 * GIB, 5 * GIB, 0, None, Some(40 * GIB)), &g).unwrap();
    assert_eq!(l.kind, LimitKind::Gpu);
    // The GPU's free memory plus the cache the process could release.
    assert_eq!(l.headroom, 2 * GIB + GIB);
    let capped = binding(&torch(4 * GIB, 5 * GIB, 0, None, Some(6 * GIB)), &g).unwrap();
    assert_eq!(capped.kind, LimitKind::Own);
    assert_eq!(capped.headroom, 2 * GIB);
    assert_eq!(
        limit_name(&capped, Framework::Jax, &g),
        "its 6.00 GiB pool limit (XLA bytes_limit)"
    );
    assert_eq!(limit_name(&l, Framework::Pytorch, &g), "GPU0's free memory");
}

#[test]
fn a_slow_leak_far_from_its_limit_waits() {
    // 20 MiB a second with 70 GiB to go: an hour away, not a warning yet.
    let (t, g, last) = run(60, 70 * GIB, |k| {
        let a = GIB + k * 20 * MIB;
        torch(a, a, 0, None, None)
    });
    assert!(risk(&t, &last, &g, now(60)).is_none());
}

#[test]
fn retries_are_counted_only_when_the_count_rises() {
    let mut track = PoolHistory::new(60);
    let with = |n: u64| {
        let mut p = torch(GIB, 2 * GIB, 0, None, None);
        p.alloc_retries = Some(n);
        p
    };
    let (a, b, c) = (with(0), with(1), with(1));
    track.push(1000, Some(&a), None);
    track.push(2000, Some(&b), Some(&a));
    track.push(3000, Some(&c), Some(&b));
    assert_eq!(track.retries_within(3000, 60_000), 1);
    assert_eq!(track.retries_within(70_000, 60_000), 0);
}

/// Fragmentation under PyTorch's expandable segments, where `inactive_split_bytes` stays 0: judged
/// from the pool's free part (reserved − allocated) and the largest free block where the probe has
/// one; a pool at its cap whose free part is steady and whose flushes succeed stays silent.
mod expandable {
    use crate::analysis::test_pools::{self, T0, with_env};
    use crate::model::Alert;
    use crate::sample::{Framework, Pool, ProcessSample, Reading};
    use crate::source::scripted::build::{GIB, MIB, gpu, process};

    const CAP: u64 = 7 * GIB;
    const EXPANDABLE: (&str, &str) = ("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True");

    fn torch(allocated: u64, reserved: u64, largest: Option<u64>, retries: u64) -> Pool {
        Pool {
            peak_allocated: Some(allocated + 16 * MIB),
            alloc_retries: Some(retries),
            ..test_pools::torch(allocated, reserved, 0, largest, Some(CAP))
        }
    }

    /// One probed job (pid 91) with `env`, one reading a second.
    fn run(secs: u64, env: &[(&str, &str)], f: impl Fn(u64) -> Pool) -> Vec<Alert> {
        test_pools::run((0..secs).map(|k| {
            let g = gpu(0, 80 * GIB, 10 * GIB, 0);
            let job = process(91, &g, 8 * GIB, Framework::Pytorch, "python3 churn.py");
            let p = ProcessSample {
                pool: Reading::Value(f(k)),
                ..with_env(job, env)
            };
            (g, vec![p])
        }))
    }

    /// The job: every other 8 MiB tensor freed for 30 s under a 7 GiB cap; the pool grows
    /// twice as fast as what stays allocated, to 2.8 GiB free between live blocks.
    fn churn(k: u64) -> Pool {
        let allocated = GIB / 2 + k * 128 * MIB;
        let reserved = (GIB / 2 + k * 256 * MIB).min(CAP - 64 * MIB);
        torch(allocated.min(reserved), reserved, None, 0)
    }

    #[test]
    fn churn_that_keeps_half_of_what_it_takes_is_a_leak_first_under_expandable_segments() {
        // What stays allocated climbs 128 MiB a second: a leak, the free part between its live
        // blocks (the pool grows twice as fast) named second.
        let alerts = run(30, &[EXPANDABLE], churn);
        let w = alerts
            .iter()
            .find(|a| a.class == "leak")
            .unwrap_or_else(|| panic!("a leak warning: {alerts:?}"));
        assert!(
            w.at_ms <= T0 + 10_000,
            "warned at {} s",
            (w.at_ms - T0) / 1000
        );
        assert!(
            w.title
                .ends_with("free between its live blocks (expandable segments) too"),
            "{}",
            w.title
        );
        let remedy = w.remedy.as_deref().unwrap();
        assert!(
            remedy.starts_with("Find what keeps memory alive"),
            "{remedy}"
        );
        assert!(
            remedy.contains("(Fragmentation comes second: max_split_size_mb or garbage_collection_threshold would only buy about"),
            "{remedy}"
        );
        assert!(
            alerts.iter().all(|a| a.class != "fragmentation-risk"),
            "{alerts:?}"
        );
        // The same figures without the setting: nothing stranded, the climb alone.
        let plain = run(30, &[], churn);
        let leak = plain.iter().find(|a| a.class == "leak").unwrap();
        assert!(!leak.title.ends_with(" too"), "{}", leak.title);
    }

    #[test]
    fn tensors_freed_from_a_full_pool_under_expandable_segments_are_holes_that_build() {
        // The H100 run: the pool filled to 6.52 GiB of its 7 GiB cap with 8 MiB tensors, then
        // every other one freed, 110 MiB a second; the pool keeps them (no largest free block:
        // the probe took no snapshot). Its 1 GiB request failed 30 s into the churn: the warning
        // comes in the first 7 s, so at least 23 s ahead (the goal: 20).
        let alerts = run(30, &[EXPANDABLE], |k| {
            torch(
                6 * GIB + 400 * MIB - k * 110 * MIB,
                6 * GIB + 532 * MIB,
                None,
                0,
            )
        });
        let w = alerts
            .iter()
            .find(|a| a.class == "fragmentation-risk")
            .unwrap_or_else(|| panic!("a fragmentation warning: {alerts:?}"));
        assert!(
            w.at_ms <= T0 + 7_000,
            "warned at {} s",
            (w.at_ms - T0) / 1000
        );
        assert!(
            w.title
                .contains("free in the pool and growing (+110M/s) while it can grow by only"),
            "{}",
            w.title
        );
        // Without the setting, the free part is cache PyTorch can release: nothing is said.
        assert!(
            run(30, &[], |k| torch(
                6 * GIB + 400 * MIB - k * 110 * MIB,
                6 * GIB + 532 * MIB,
                None,
                0
            ))
            .is_empty()
        );
    }

    #[test]
    fn a_full_pool_whose_free_part_is_in_small_blocks_is_fragmented_under_expandable_segments() {
        // Allocated flat at 4.2 GiB, the pool at its cap with 2.8 GiB free in 8 MiB holes (the
        // probe's memory snapshot), nothing climbing.
        let alerts = run(20, &[EXPANDABLE], |_| {
            torch(4 * GIB + 200 * MIB, CAP - 16 * MIB, Some(8 * MIB), 0)
        });
        assert_eq!(
            alerts.iter().map(|a| a.class.as_str()).collect::<Vec<_>>(),
            vec!["fragmentation-risk"]
        );
        assert!(
            alerts[0]
                .title
                .contains("but its largest free block is 8.00 MiB"),
            "{}",
            alerts[0].title
        );
    }

    #[test]
    fn a_steady_pool_at_its_cap_with_flushes_that_succeed_is_silent_under_expandable_segments() {
        // 5.5 to 6.2 GiB in use under the 7 GiB cap, about 700 MiB free, a flush every 3 s.
        let alerts = run(300, &[EXPANDABLE], |k| {
            let allocated = 5 * GIB + 512 * MIB + (k * 7 % 8) * 90 * MIB;
            torch(allocated, CAP - 100 * MIB, None, k / 3)
        });
        assert!(alerts.is_empty(), "{alerts:?}");
    }
}
