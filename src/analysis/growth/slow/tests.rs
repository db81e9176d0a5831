//! The slow-leak rule on scripted multi-hour sequences (time is the samples' own, so hours pass
//! in milliseconds): steady leaks of 150 MiB/min, 20 MiB/min and 20 MiB/h, probed and not,
//! warned in time with the limit that binds first; a healthy run with an evaluation every
//! 30 minutes, a warm-up then a plateau, a cache that fills then holds, never.

use super::*;
use crate::analysis::test_pools::torch;
use crate::model::{GpuTrack, ProcessTrack, Ring};
use crate::sample::{Framework, Reading};
use crate::source::scripted::build::{GIB, MIB, gpu, process};

const T0: u64 = 1_800_000_000_000;
const MINUTE: u64 = 60_000;
const HOUR: u64 = 60 * MINUTE;

/// What a job's memory reads at a moment: with the probe (allocated, reserved, cap) or without
/// (device memory only).
enum Reads {
    Probed(u64, u64, Option<u64>),
    Device(u64),
}

/// The in-step temporaries of a job read at any moment of a step: up to 1.5 GiB above its
/// floor, now and then none (between steps).
fn temporaries(k: u64) -> u64 {
    (k * 7919 % 7) * 256 * MIB
}

/// Drives one process on an 80 GiB GPU with 60 GiB free through `f(ms since start)` every
/// `every_ms` for `for_ms`, asking the rule once a simulated minute; the first warning and when.
fn run(every_ms: u64, for_ms: u64, f: impl Fn(u64, u64) -> Reads) -> Option<(u64, Risk)> {
    let g = GpuTrack {
        sample: gpu(0, 80 * GIB, 20 * GIB, 0),
        segments: None,
        used: Ring::with_tiers(600),
        lost_since_ms: None,
        total: None,
        unattributed: 0,
        alerts: 0,
        infos: 0,
        troubles: Vec::new(),
        xids: Default::default(),
        util: None,
    };
    let sample = |k: u64, r: &Reads| {
        let mut p = process(7, &g.sample, GIB, Framework::Pytorch, "python3 train.py");
        match *r {
            Reads::Probed(a, res, limit) => {
                p.device_memory = Reading::Value(res + 500 * MIB);
                p.pool = Reading::Value(torch(a, res, 0, None, limit));
            }
            Reads::Device(d) => p.device_memory = Reading::Value(d),
        }
        let _ = k;
        p
    };
    let mut t: Option<ProcessTrack> = None;
    for k in 0..=for_ms / every_ms {
        let at = k * every_ms;
        let r = f(at, k);
        let s = sample(k, &r);
        let track = t.get_or_insert_with(|| ProcessTrack::new(&s, T0 + at, 600));
        track.observe(s, T0 + at);
        if at.is_multiple_of(MINUTE) {
            let found = match (&r, track.sample.pool.value()) {
                (Reads::Probed(..), Some(p)) => probed(track, p, &g),
                _ => unprobed(track, &g),
            };
            if let Some(risk) = found {
                return Some((at, risk));
            }
        }
    }
    None
}

/// A job that loads for 20 s, then keeps `per_min` bytes a minute from then on.
fn leaking(per_min: u64, cap: Option<u64>) -> impl Fn(u64, u64) -> Reads {
    move |at, k| {
        let floor = GIB + at.saturating_sub(20_000) * per_min / MINUTE;
        let a = floor + temporaries(k);
        Reads::Probed(a, a.max(3 * GIB), cap)
    }
}

#[test]
fn a_leak_of_150_mib_a_minute_under_a_4_gib_cap_is_warned_within_3_minutes() {
    let (at, r) = run(1000, 20 * MINUTE, leaking(150 * MIB, Some(4 * GIB))).expect("warned");
    assert!(
        at - 20_000 <= 3 * MINUTE,
        "warned after {} s of climb",
        (at - 20_000) / 1000
    );
    assert_eq!(r.class, "leak");
    assert!(
        r.title.contains("15") && r.title.contains(" MiB/min"),
        "{}",
        r.title
    );
    assert!(r.title.contains("reaches its 4.00 GiB cap"), "{}", r.title);
    // Its pool holds 3 GiB between steps, which its steps use: what is left under the cap
    // above that, about 1 GiB, is what the leak has, some 7 minutes at 150 MiB a minute.
    let minutes: u64 = r
        .title
        .rsplit("in about ")
        .next()
        .unwrap()
        .trim_end_matches('m')
        .parse()
        .unwrap();
    assert!((5..=9).contains(&minutes), "{}", r.title);
    assert!(
        r.evidence.iter().any(|e| e.contains("left to the leak")),
        "{:?}",
        r.evidence
    );
    assert!(r.remedy.contains("keeps memory alive"));
}

#[test]
fn a_leak_of_20_mib_a_minute_is_warned_within_20_minutes_far_from_any_limit() {
    let (at, r) = run(1000, 40 * MINUTE, leaking(20 * MIB, None)).expect("warned");
    assert!(at <= 20 * MINUTE, "warned after {} min", at / MINUTE);
    assert!(r.title.contains("GPU0 full in about"), "{}", r.title);
}

#[test]
fn an_unprobed_leak_seen_in_nvml_segments_is_warned_within_20_minutes() {
    // Device memory grows a 20 MiB segment a minute (what the allocator asks of CUDA).
    let (at, r) = run(1000, 40 * MINUTE, |at, _| {
        Reads::Device(4 * GIB + at.saturating_sub(20_000) / MINUTE * 20 * MIB)
    })
    .expect("warned");
    assert!(at <= 20 * MINUTE, "warned after {} min", at / MINUTE);
    assert!(
        r.title.contains("(no probe): GPU0 full in about"),
        "{}",
        r.title
    );
    assert!(r.title.contains(" MiB/min"), "{}", r.title);
}

#[test]
fn a_leak_of_20_mib_an_hour_is_warned_in_hours_with_days_to_full() {
    let (at, r) = run(10_000, 24 * HOUR, leaking(20 * MIB / 60, None)).expect("warned");
    assert!(at <= 12 * HOUR, "warned after {} h", at / HOUR);
    assert!(r.title.contains(" MiB/h"), "{}", r.title);
    assert!(r.title.contains("GPU0 full in about"), "{}", r.title);
    assert!(r.title.ends_with('d'), "days away: {}", r.title);
}

#[test]
fn a_healthy_run_with_an_evaluation_every_30_minutes_is_never_warned() {
    // Training holds 6 GiB between steps; every 30 minutes an evaluation takes 3 GiB more over
    // its first batches and holds it for 4 minutes, then frees it; a checkpoint every 10
    // minutes adds 1 GiB for 20 s.
    let found = run(1000, 3 * HOUR, |at, k| {
        let m = at % (30 * MINUTE);
        let eval = if m < 4 * MINUTE {
            (m / 5000 + 1).min(3) * GIB
        } else {
            0
        };
        let ckpt = if at % (10 * MINUTE) < 20_000 { GIB } else { 0 };
        let a = 6 * GIB + eval + ckpt + temporaries(k);
        Reads::Probed(a, 12 * GIB, None)
    });
    assert!(found.is_none(), "{:?}", found.map(|f| f.1.title));
    // The same job seen without the probe: its device memory is its pool, which grew in the
    // first evaluation and stays.
    let found = run(1000, 3 * HOUR, |at, _| {
        Reads::Device(if at < 15_000 { 9 * GIB } else { 12 * GIB })
    });
    assert!(found.is_none(), "{:?}", found.map(|f| f.1.title));
}

#[test]
fn a_warm_up_then_a_plateau_is_never_warned() {
    // Memory climbs 3 GiB over 90 s in steps (batch and sequence warm-up), then holds an hour.
    let found = run(1000, HOUR, |at, k| {
        let up = (at.min(90_000) / 5000) * 3 * GIB / 18;
        let a = 2 * GIB + up + temporaries(k);
        Reads::Probed(a, a.max(8 * GIB), None)
    });
    assert!(found.is_none(), "{:?}", found.map(|f| f.1.title));
}

#[test]
fn a_cache_that_fills_then_holds_is_never_warned() {
    // Without the probe: the pool grows as new shapes come, fast at first, then ever slower,
    // in 20 MiB segments, towards 6 GiB more, then holds.
    let found = run(1000, 2 * HOUR, |at, _| {
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let filled = (6.0 * (1.0 - (-(at as f64) / 90_000.0).exp()) * 1024.0 / 20.0) as u64;
        Reads::Device(4 * GIB + filled * 20 * MIB)
    });
    assert!(found.is_none(), "{:?}", found.map(|f| f.1.title));
    // Batches of varying length: the pool grows to hold the longest one seen so far, so it
    // grows when a longer one comes, ever more rarely.
    let found = run(1000, 2 * HOUR, |_, k| {
        let longest = (0..=k).map(|i| i * 2_654_435_761 % 4096).max().unwrap_or(0);
        Reads::Device(4 * GIB + longest * 2 * MIB)
    });
    assert!(found.is_none(), "{:?}", found.map(|f| f.1.title));
    // With the probe: the cache grows, allocated does not.
    let found = run(1000, HOUR, |at, k| {
        let reserved = 4 * GIB + at.min(20 * MINUTE) / 1000 * 4 * MIB;
        Reads::Probed(2 * GIB + temporaries(k), reserved, None)
    });
    assert!(found.is_none(), "{:?}", found.map(|f| f.1.title));
}

#[test]
fn a_leak_that_stops_is_not_warned_after_it_stopped() {
    // It kept 150 MiB a minute for 1 minute (less than a certain trend), then freed it all.
    let found = run(1000, 30 * MINUTE, |at, k| {
        let kept = if at < 80_000 {
            at.saturating_sub(20_000) * 150 * MIB / MINUTE
        } else {
            0
        };
        let a = GIB + kept + temporaries(k);
        Reads::Probed(a, 4 * GIB, None)
    });
    assert!(found.is_none(), "{:?}", found.map(|f| f.1.title));
}

#[test]
fn rates_read_as_people_say_them() {
    assert_eq!(per_time(150.0 * 1_048_576.0 / 60.0), "150 MiB/min");
    assert_eq!(per_time(20.0 * 1_048_576.0 / 3600.0), "20 MiB/h");
    assert_eq!(per_time(2.5 * 1_048_576.0 / 60.0), "2.5 MiB/min");
    assert_eq!(per_time(1.5 * 1_073_741_824.0 / 60.0), "1.5 GiB/min");
}
