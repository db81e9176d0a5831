//! The growing-peak rule on scripted probe sequences: a batch that grows every step under a cap
//! (the job resets its peak each step, and the probe reads at any moment of one), warned well
//! before the cap with its rate and time; and the healthy cases that must stay silent: a warm-up
//! that plateaus, a job tuned to 90-95 % of its cap whose cache flushes succeed, and memory kept
//! between steps (a leak, the leak rule's).

use crate::analysis::test_pools::{self, Second, T0, torch};
use crate::model::{Alert, Level};
use crate::sample::{Framework, GpuSample, Pool, ProcessSample, Reading};
use crate::source::scripted::build::{GIB, MIB, gpu, process};

const CAP: u64 = 12 * GIB;

/// One reading of a PyTorch pool: `floor` allocated between steps, a step needing `peak`, read at
/// phase `k % 4` of the step (0: between steps, its peak counter just reset; 1: early in a step;
/// 2 and 3: at the top of it), `flushes` cache flushes so far.
fn reading(k: u64, floor: u64, peak: u64, flushes: u64, cap: Option<u64>) -> Pool {
    let (allocated, peak_seen) = match k % 4 {
        0 => (floor, floor),
        1 => (floor + (peak - floor) / 3, floor + (peak - floor) / 3),
        _ => (peak - 64 * MIB, peak),
    };
    let reserved = (peak + 512 * MIB).min(cap.unwrap_or(u64::MAX));
    Pool {
        at_ms: T0 + k * 1000,
        peak_allocated: Some(peak_seen),
        alloc_retries: Some(flushes),
        ..torch(allocated, reserved, 40 * MIB, None, cap)
    }
}

/// The probed job (pid 7) on an 80 GiB GPU with 60 GiB free, its probe reading `pool`.
fn job(pool: Pool) -> (GpuSample, Vec<ProcessSample>) {
    let g = gpu(0, 80 * GIB, 20 * GIB, 0);
    let p = ProcessSample {
        pool: Reading::Value(pool),
        ..process(7, &g, 13 * GIB, Framework::Pytorch, "python3 train.py")
    };
    (g, vec![p])
}

/// The probed job, one reading a second for `secs` seconds.
fn run(secs: u64, f: impl Fn(u64) -> Pool) -> Vec<Alert> {
    test_pools::run((0..secs).map(|k| job(f(k))))
}

fn of<'a>(alerts: &'a [Alert], class: &str) -> Option<&'a Alert> {
    alerts.iter().find(|a| a.class == class)
}

#[test]
fn a_batch_growing_every_step_under_a_cap_is_warned_well_before_it() {
    // The job: 1.5 GiB between steps, each step's peak 170 MiB above the last from 2 GiB,
    // so the 12 GiB cap is reached at about 60 s; from 30 s the allocator flushes its cache to
    // fit each step (two flushes a second).
    let peak = |k: u64| 2 * GIB + k * 170 * MIB;
    let alerts = run(60, |k| {
        let flushes = k.saturating_sub(30) * 2;
        reading(k, 3 * GIB / 2, peak(k).min(CAP), flushes, Some(CAP))
    });
    let w = of(&alerts, "growing-peak").expect("a growing-peak warning");
    let full_at = T0 + (CAP - 2 * GIB) / (170 * MIB) * 1000;
    assert!(
        w.at_ms + 20_000 <= full_at,
        "warned {} s before the cap",
        (full_at - w.at_ms) / 1000
    );
    assert!(
        w.title
            .starts_with("pid 7 torch needs more every step (its peak grows"),
        "{}",
        w.title
    );
    assert!(
        w.title
            .contains("): reaches its 12.00 GiB cap (per-process memory fraction) in about"),
        "{}",
        w.title
    );
    assert!(
        w.evidence[0].contains("while allocated between steps stayed near 1.50 GiB"),
        "{:?}",
        w.evidence
    );
    let remedy = w.remedy.as_deref().unwrap();
    for part in [
        "batch-size or sequence-length schedule",
        "activation checkpointing",
        "set_per_process_memory_fraction",
    ] {
        assert!(remedy.contains(part), "{remedy}");
    }
    // What stays between steps is flat: never called a leak.
    assert!(of(&alerts, "leak").is_none(), "{alerts:?}");
}

#[test]
fn repeated_cache_flushes_while_the_peak_climbs_warn_even_before_the_halfway_mark() {
    // A slower schedule (40 MiB a step) that already fits only by flushing the cache.
    let alerts = run(60, |k| {
        let peak = 6 * GIB + k * 40 * MIB;
        reading(k, 3 * GIB, peak, k, Some(CAP))
    });
    let w = of(&alerts, "growing-peak").expect("a growing-peak warning");
    assert!(
        w.evidence
            .iter()
            .any(|e| e.starts_with("the allocator flushed its cache to fit a step in")),
        "{:?}",
        w.evidence
    );
}

#[test]
fn a_warm_up_that_plateaus_is_never_warned() {
    // Peak 2 GiB to 6.5 GiB over 45 s (a batch-size warm-up), then the same for four minutes.
    let alerts = run(300, |k| {
        let peak = 2 * GIB + k.min(45) * 100 * MIB;
        reading(k, 3 * GIB / 2, peak, 0, Some(CAP))
    });
    assert!(alerts.is_empty(), "{alerts:?}");
}

#[test]
fn a_job_tuned_to_90_to_95_percent_of_its_cap_with_flushes_that_succeed_is_never_warned() {
    // Peaks between 90 and 94 % of a 12 GiB cap for five minutes; a cache flush every 4 s fits
    // the step, as PyTorch does at a cap.
    let alerts = run(300, |k| {
        let peak = CAP / 100 * (90 + (k * 7 % 5));
        let mut p = reading(k, 5 * GIB, peak, k / 4, Some(CAP));
        p.reserved = Some(CAP - 200 * MIB);
        p.cached_free = Some(CAP - 200 * MIB - p.allocated.unwrap());
        p
    });
    assert!(alerts.is_empty(), "{alerts:?}");
}

#[test]
fn memory_kept_between_steps_is_the_leak_rule_s_not_a_growing_peak() {
    // Floor and peak climb together, slowly enough that no leak is due within the horizon.
    let alerts = run(120, |k| {
        let floor = 2 * GIB + k * 8 * MIB;
        reading(k, floor, floor + GIB, 0, None)
    });
    assert!(of(&alerts, "growing-peak").is_none(), "{alerts:?}");
}

#[test]
fn a_running_peak_raised_by_rare_long_inputs_is_not_a_growing_peak() {
    // Variable-length inputs under the cap: each step needs 4 to 10 GiB at random; the framework's
    // peak is never reset, so it only rises, by records that come ever more rarely.
    let mut x: u64 = 12_345;
    let steps: Vec<u64> = (0..300)
        .map(|_| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            4 * GIB + (x >> 33) % (6 * GIB)
        })
        .collect();
    let alerts = run(300, |k| {
        let running = steps[..=k as usize].iter().copied().max().unwrap();
        let mut p = reading(k, 3 * GIB, steps[k as usize], 0, Some(CAP));
        p.peak_allocated = Some(running);
        p
    });
    assert!(of(&alerts, "growing-peak").is_none(), "{alerts:?}");
}

#[test]
fn a_pool_that_holds_more_after_each_cache_flush_is_a_growing_need() {
    // The corpus's warmup-peaks as the probe read it: always between steps, just after the job
    // reset its peak (peak = allocated = 0.98 GiB); the pool grows with the batch, is flushed at
    // the 12 GiB cap and takes more again after each flush (6.07, 7.51 GiB ...).
    let pool: [(u64, u64); 7] = [
        (0, 2820),
        (8, 3980),
        (18, 9740),
        (22, 6070),
        (25, 9140),
        (29, 7510),
        (32, 11350),
    ];
    let flushes_at = [22u64, 29];
    let alerts = run(40, |k| {
        let reserved = pool.iter().rev().find(|(at, _)| *at <= k).unwrap().1 * MIB;
        let flushes = flushes_at.iter().filter(|at| **at <= k).count() as u64;
        let mut p = reading(0, 1004 * MIB, 1004 * MIB, flushes, Some(CAP));
        p.reserved = Some(reserved);
        p.cached_free = Some(reserved - 1004 * MIB);
        p
    });
    let w = of(&alerts, "growing-peak").expect("a growing-peak warning");
    assert_eq!(w.at_ms, T0 + 29_000, "at the second flush");
    assert!(
        w.title.starts_with(
            "pid 7 torch needs more every step (its pool takes +205M/s more after each of 2 cache flushes): reaches its 12.00 GiB cap (per-process memory fraction) in about 2"
        ),
        "{}",
        w.title
    );
    assert!(
        w.evidence[0].starts_with("the allocator flushed its cache 2 times in 7s, its pool holding more right after each flush than after the one before (from 5.93 GiB to 7.33 GiB"),
        "{:?}",
        w.evidence
    );
    // The same pool growing to the cap and flushing once, then holding the same after each
    // flush: a cache that fills and is emptied, healthy.
    let alerts = run(60, |k| {
        let reserved = if k % 20 < 19 {
            (3 + k % 20 / 2) * GIB
        } else {
            5 * GIB
        };
        let mut p = reading(0, GIB, GIB, k / 20, Some(CAP));
        p.reserved = Some(reserved.min(CAP));
        p.cached_free = Some(reserved.min(CAP) - GIB);
        p
    });
    assert!(alerts.is_empty(), "{alerts:?}");
}

#[test]
fn the_oom_at_the_end_of_a_growing_peak_names_it_with_the_schedule_remedy_first() {
    let oom = "CUDA out of memory. Tried to allocate 1.54 GiB. GPU 0 has a total capacity of 79.18 GiB of which 63.06 GiB is free. Including non-PyTorch memory, this process has 11.21 GiB memory in use. 12.00 GiB allowed; Of the allocated memory 9.93 GiB is allocated by PyTorch, and 566.57 MiB is reserved by PyTorch but unallocated.";
    let alerts = test_pools::run((0..60u64).map(|k| {
        let peak = (2 * GIB + k * 170 * MIB).min(CAP);
        let at = T0 + k * 1000;
        let failures = if k == 59 {
            let f = crate::oom::parse_all(oom.as_bytes()).remove(0);
            vec![f.into_failure(at, "train.out", Some(7))]
        } else {
            Vec::new()
        };
        Second {
            failures,
            ..job(reading(k, 3 * GIB / 2, peak, 0, Some(CAP))).into()
        }
    }));
    // The newest failure.
    let f = alerts
        .iter()
        .rfind(|a| a.level == Level::Failure)
        .expect("the OOM");
    assert!(
        f.title
            .starts_with("pid 7 PyTorch OOM: pool-limit after a growing peak, asked 1.54 GiB"),
        "{}",
        f.title
    );
    assert!(
        f.evidence[0].starts_with("a need that grew every step: its peak"),
        "{:?}",
        f.evidence
    );
    let remedy = f.remedy.as_deref().unwrap();
    assert!(
        remedy.starts_with("Stop pid 7's batch-size or sequence-length schedule")
            && remedy.ends_with("Raise the fraction given to torch.cuda.set_per_process_memory_fraction (now 12.00 GiB allowed)."),
        "{remedy}"
    );
}
