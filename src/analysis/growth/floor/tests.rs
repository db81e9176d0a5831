//! The floor climb on readings of busy training loops: the issue's GPT-2 keeping a slice of every
//! step's logits (13 MB a step at 15 steps a second, ~195 MB/s, under 4.5 GB of in-step
//! temporaries), read as the probe reads it, one reading a second; and what must never be a climb:
//! a flat floor under the same steps, a warm-up, an evaluation that gives back what it took,
//! peaks that grow over a flat floor.

use super::*;
use crate::sample::Pool;

const MB: u64 = 1_000_000;
const GB: u64 = 1_000_000_000;
/// The issue's job: the floor after its first step (weights and AdamW's state), its leak a
/// second, and what a step holds on top of its floor at its peak.
const FLOOR: u64 = GB;
const LEAK: u64 = 13 * MB * 15;
const STEP: u64 = 4_500 * MB;
/// What is still referenced when the job waits at its sync point: the step's logits.
const LOGITS: u64 = 8 * 512 * 50_257 * 4;

/// A fixed pseudo-random sequence in [0, 1) (no dependency, the same on every run).
fn noise(seed: u64, k: u64) -> f64 {
    let mut x = (seed.wrapping_mul(6_364_136_223_846_793_005) ^ k)
        .wrapping_mul(2_862_933_555_777_941_757)
        .wrapping_add(3_037_000_493);
    x ^= x >> 29;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 32;
    #[allow(clippy::cast_precision_loss)]
    let f = (x >> 11) as f64 / (1u64 << 53) as f64;
    f
}

/// Where in a step reading `k` fell: at the sync point most of the time (`at_sync` of the
/// readings), anywhere in the step otherwise.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn in_step(seed: u64, k: u64, at_sync: f64) -> u64 {
    if noise(seed, 2 * k) < at_sync {
        LOGITS
    } else {
        (STEP as f64 * noise(seed, 2 * k + 1)) as u64
    }
}

/// `secs` readings a second apart (a few ms late each), the floor `floor(k)` under the step.
fn readings(secs: u64, seed: u64, at_sync: f64, floor: impl Fn(u64) -> u64) -> Vec<(u64, u64)> {
    (0..secs)
        .map(|k| {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let late = (noise(seed ^ 7, k) * 40.0) as u64;
            (k * 1000 + late, floor(k) + in_step(seed, k, at_sync))
        })
        .collect()
}

/// The first second at which the readings so far climb by at least `rise`, if any.
fn first_climb(r: &[(u64, u64)], rise: u64) -> Option<u64> {
    (1..r.len()).find_map(|k| {
        let c = climb(&r[..=k], 0, r[k].0)?;
        (c.to - c.from >= rise).then_some(r[k].0 / 1000)
    })
}

/// When each of 40 runs' readings first climb (by 256 MiB), sorted; `None` last.
fn seen(secs: u64, at_sync: f64) -> Vec<Option<u64>> {
    let mut v: Vec<Option<u64>> = (0..40)
        .map(|seed| {
            first_climb(
                &readings(secs, seed, at_sync, |k| FLOOR + k * LEAK),
                256 << 20,
            )
        })
        .collect();
    v.sort_unstable_by_key(|s| s.unwrap_or(u64::MAX));
    v
}

#[test]
fn the_issues_leak_is_seen_within_about_15_s_of_its_climb() {
    // Two readings in three at the sync point, one inside a step: seen in 11 s in half the runs,
    // 15 s in nine of ten, 21 s at worst.
    let s = seen(60, 0.67);
    assert!(s.iter().all(Option::is_some), "{s:?}");
    assert!(
        s[19] <= Some(12) && s[35] <= Some(15) && s[39] <= Some(21),
        "{s:?}"
    );
    // Nine readings in ten at the sync point: 10 s.
    assert!(seen(60, 0.9)[35] <= Some(11));
    let r = readings(60, 1, 0.67, |k| FLOOR + k * LEAK);
    let c = climb(&r[..=20], 0, r[20].0).unwrap();
    let rate = c.rate / 1e6;
    assert!((160.0..230.0).contains(&rate), "{rate} MB/s, the leak 195");
}

#[test]
fn readings_spread_through_the_steps_take_longer() {
    // Every reading anywhere in its step: 4.5 GB of noise over a 195 MB/s floor. Half the runs
    // are seen within 26 s (never before 20: seven groups), most within a minute, some not in
    // 90 s (the older rules, on allocated + stranded, see those).
    let s = seen(90, 0.0);
    assert!(s[0] >= Some(20), "{s:?}");
    assert!(
        s[19].is_some_and(|t| t <= 26) && s[27].is_some_and(|t| t <= 60),
        "{s:?}"
    );
}

#[test]
fn a_flat_floor_under_busy_steps_is_never_a_climb() {
    for seed in 0..20 {
        for at_sync in [0.9, 0.67, 0.5] {
            // Ten minutes of steps over the same floor.
            let r = readings(600, seed, at_sync, |_| 9 * GB);
            assert_eq!(
                first_climb(&r, 256 << 20),
                None,
                "seed {seed}, {at_sync} at the sync point"
            );
        }
    }
}

#[test]
fn a_warm_up_is_not_a_climb() {
    // The weights, then AdamW's state at the first step, then the cuBLAS workspace: three jumps,
    // then a flat floor.
    let r = readings(60, 3, 0.67, |k| match k {
        0..3 => 330 * MB,
        3..6 => 990 * MB,
        6..9 => 1_010 * MB,
        _ => 1_020 * MB,
    });
    assert_eq!(first_climb(&r, 64 << 20), None);
    // One jump (a model loaded onto the GPU) is not a climb either.
    let r = readings(60, 4, 0.9, |k| if k < 20 { GB } else { 7 * GB });
    assert_eq!(first_climb(&r, 64 << 20), None);
}

#[test]
fn an_evaluation_that_gives_back_what_it_took_ends_the_climb() {
    // Predictions kept on the GPU for 20 s of evaluation (100 MB/s), freed at its end.
    let floor = |k: u64| match k {
        30..50 => 2 * GB + (k - 30) * 100 * MB,
        _ => 2 * GB,
    };
    let r = readings(120, 5, 0.67, floor);
    for k in 55..120usize {
        assert_eq!(climb(&r[..=k], 0, r[k].0), None, "at {k} s");
    }
}

#[test]
fn peaks_that_grow_over_a_flat_floor_are_not_a_climb() {
    // Each step needs more (a batch-size warm-up), the floor does not move; most readings at the
    // sync point between steps.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let r: Vec<(u64, u64)> = (0..120)
        .map(|k| {
            let top = 500 * MB + k * 60 * MB;
            let v = if noise(11, k) < 0.67 {
                3 * GB
            } else {
                3 * GB + (top as f64 * noise(12, k)) as u64
            };
            (k * 1000, v)
        })
        .collect();
    assert_eq!(first_climb(&r, 256 << 20), None);
}

#[test]
fn a_gap_in_the_readings_ends_the_climb() {
    let mut r = readings(40, 6, 1.0, |k| FLOOR + k * LEAK);
    // No readings for 7 s (the probe stalled): the climb starts again after the gap.
    r.retain(|p| !(10_000..17_000).contains(&p.0));
    let c = climb(&r, 0, r.last().unwrap().0).unwrap();
    assert!(c.span_ms <= 23_000, "{c:?}");
}

/// The issue's cap: `set_per_process_memory_fraction` for 16 GiB.
const CAP: u64 = 16 << 30;

/// A PyTorch pool read a second apart for `secs` s: allocated as `readings` has it, the pool
/// holding the most the job ever needed (floor and step, and what `stranded(k)` strands).
fn pool_history(
    secs: u64,
    seed: u64,
    at_sync: f64,
    floor: impl Fn(u64) -> u64,
    stranded: impl Fn(u64) -> u64,
) -> (PoolHistory, Pool) {
    let mut h = PoolHistory::new(600);
    let mut held = 0u64;
    let mut before: Option<Pool> = None;
    for (k, (at, allocated)) in readings(secs, seed, at_sync, &floor)
        .into_iter()
        .enumerate()
    {
        let k = k as u64;
        held = held.max(floor(k) + STEP + stranded(k));
        let pool = Pool {
            at_ms: at,
            ..crate::analysis::test_pools::torch(allocated, held, stranded(k), None, Some(CAP))
        };
        h.push(at, Some(&pool), before.as_ref());
        before = Some(pool);
    }
    (h, before.unwrap())
}

fn cap_limit(pool: &Pool) -> Limit {
    let held = super::super::unreleasable(pool).unwrap();
    Limit {
        kind: super::super::LimitKind::Own,
        total: CAP,
        headroom: CAP.saturating_sub(held),
    }
}

/// When the job's floor leak is first warned (its seconds), if it is in `secs`.
fn warned(secs: u64, seed: u64, at_sync: f64, floor: impl Fn(u64) -> u64 + Copy) -> Option<u64> {
    // The kept slices strand the segments around them: 45 MB more a second.
    let stranded = |k: u64| 200 * MB + k * 45 * MB;
    (5..secs).find(|&k| {
        let (h, pool) = pool_history(k + 1, seed, at_sync, floor, stranded);
        let now = h.allocated.last().unwrap().at_ms;
        leak(&h, &pool, &cap_limit(&pool), now).is_some_and(|l| l.warns(10 * 60_000))
    })
}

#[test]
fn the_issues_leak_under_its_16_gib_cap_is_warned_fast_and_well_ahead() {
    // 44 s from its first step to the OOM (667 slices kept at 15 steps a second): warned within
    // 13 s in half the runs, 15 s in nine of ten, 18 s at worst: at least 26 s ahead.
    let mut at: Vec<u64> = (0..10)
        .map(|seed| {
            warned(44, seed, 0.67, |k| FLOOR + k * LEAK)
                .unwrap_or_else(|| panic!("seed {seed}: not warned"))
        })
        .collect();
    at.sort_unstable();
    assert!(at[4] <= 13 && at[8] <= 15 && at[9] <= 18, "{at:?}");
    let (h, pool) = pool_history(
        15,
        2,
        0.67,
        |k| FLOOR + k * LEAK,
        |k| 200 * MB + k * 45 * MB,
    );
    let l = leak(
        &h,
        &pool,
        &cap_limit(&pool),
        h.allocated.last().unwrap().at_ms,
    )
    .unwrap();
    assert!(l.pool_grew && l.eta_ms < FAST_HORIZON_MS, "{l:?}");
}

#[test]
fn a_healthy_job_near_its_cap_under_busy_steps_is_never_warned() {
    // A 9 GB floor, steps to 13.5 GB under the 16 GiB cap, for ten minutes: however its readings
    // fall, nothing is warned (a floor that seems to rise by chance in a pool that does not grow
    // is not a young leak; an older one must hold for 30 s).
    for seed in 0..6 {
        for at_sync in [0.67, 0.3, 0.0] {
            assert_eq!(
                warned(600, seed + 100, at_sync, |_| 9 * GB),
                None,
                "seed {seed}, {at_sync} at the sync point"
            );
        }
    }
}
