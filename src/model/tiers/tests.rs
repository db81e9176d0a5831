//! The tiers on scripted readings: floors and peaks kept, gaps kept as gaps, time without
//! samples turned into gaps, bounded storage, and a rebuilt tier equal to the original.

use super::*;

const R: Resolution = Resolution {
    bucket_ms: 10_000,
    span_ms: 60_000,
};

type Figures = (u64, Option<u64>, Option<u64>, Option<u64>);

fn figures(t: &Tier) -> Vec<Figures> {
    t.iter().map(|b| (b.at_ms, b.min, b.max, b.last)).collect()
}

#[test]
fn a_bucket_keeps_its_floor_its_peak_and_its_last_reading() {
    let mut t = Tier::new(R);
    for (at, v) in [
        (20_000, 5 << 20),
        (21_000, 9 << 20),
        (25_000, 2 << 20),
        (29_999, 4 << 20),
    ] {
        t.push(at, Some(v));
    }
    assert_eq!(
        figures(&t),
        vec![(20_000, Some(2 << 20), Some(9 << 20), Some(4 << 20))]
    );
}

#[test]
fn a_bucket_without_readings_is_a_gap_and_so_is_time_without_samples() {
    let mut t = Tier::new(R);
    t.push(0, Some(1 << 20));
    t.push(10_000, None);
    t.push(41_000, Some(3 << 20));
    assert_eq!(
        figures(&t),
        vec![
            (0, Some(1 << 20), Some(1 << 20), Some(1 << 20)),
            (10_000, None, None, None),
            (20_000, None, None, None),
            (30_000, None, None, None),
            (40_000, Some(3 << 20), Some(3 << 20), Some(3 << 20)),
        ]
    );
    // A zero is a reading, not a gap.
    t.push(50_000, Some(0));
    assert_eq!(t.iter().last().unwrap().min, Some(0));
}

#[test]
fn kib_rounding_never_raises_a_floor_nor_lowers_a_peak() {
    let mut t = Tier::new(R);
    t.push(0, Some(1500));
    let b = t.iter().next().unwrap();
    assert_eq!((b.min, b.max, b.last), (Some(1024), Some(2048), Some(1024)));
}

#[test]
fn the_tier_keeps_its_capacity_and_a_long_silence_restarts_it() {
    let mut t = Tier::new(R);
    for k in 0..100u64 {
        t.push(k * 10_000, Some(k << 20));
        assert!(t.len() <= 6 && t.allocated() <= 16);
    }
    assert_eq!(t.iter().next().unwrap().at_ms, 940_000);
    t.push(10_000_000, Some(1));
    assert_eq!(t.len(), 1);
    assert_eq!(t.since(0).count(), 1);
}

#[test]
fn a_clock_set_back_joins_the_newest_bucket() {
    let mut t = Tier::new(R);
    t.push(30_000, Some(5 << 20));
    t.push(2_000, Some(1 << 20));
    assert_eq!(
        figures(&t),
        vec![(30_000, Some(1 << 20), Some(5 << 20), Some(1 << 20))]
    );
}

#[test]
fn a_rebuilt_tier_equals_the_original() {
    let mut t = Tier::new(R);
    for k in 0..20u64 {
        t.push(k * 4_000, (k % 5 != 0).then_some((k * 3) << 20));
    }
    let buckets: Vec<Bucket> = t.iter().collect();
    let back = Tier::restore(R, buckets[0].at_ms, &buckets);
    assert_eq!(back, t);
    assert_eq!(t.since(40_000).next().unwrap().at_ms, 40_000);
    assert_eq!(t.since(40_001).next().unwrap().at_ms, 50_000);
}

/// A tier as a plain list of (slot, readings) kept by scanning: what `Tier` must equal.
fn by_scan(pushes: &[(u64, Option<u64>)], r: Resolution) -> Vec<Figures> {
    let (w, cap) = (r.bucket_ms, r.capacity() as u64);
    let mut slots: Vec<(u64, Vec<u64>)> = Vec::new();
    for &(at, v) in pushes {
        let slot = at / w * w;
        match slots.last() {
            Some((newest, _)) if slot > newest + w * cap => slots.clear(),
            _ => {}
        }
        let mut next = slots.last().map_or(slot, |(n, _)| n + w);
        while next <= slot {
            slots.push((next, Vec::new()));
            next += w;
        }
        slots.last_mut().unwrap().1.extend(v);
        let keep = slots.len().saturating_sub(cap as usize);
        slots.drain(..keep);
    }
    slots
        .iter()
        .map(|(at, vs)| {
            let min = vs.iter().min().map(|v| v / 1024 * 1024);
            let max = vs.iter().max().map(|v| v.div_ceil(1024) * 1024);
            let last = vs.last().map(|v| v / 1024 * 1024);
            (*at, min, max, last)
        })
        .collect()
}

proptest::proptest! {
    #[test]
    fn a_tier_equals_its_scan(
        steps in proptest::collection::vec(
            (0u64..25_000, proptest::option::weighted(0.8, 0u64..(1 << 40)), proptest::bool::weighted(0.03)),
            0..200,
        ),
    ) {
        let mut t = Tier::new(R);
        let mut at = 1_000_000u64;
        let mut pushes = Vec::new();
        for (dt, v, silence) in steps {
            at += if silence { 100_000 } else { dt };
            t.push(at, v);
            pushes.push((at, v));
            proptest::prop_assert_eq!(figures(&t), by_scan(&pushes, R));
            proptest::prop_assert!(t.allocated() <= R.capacity().max(16));
        }
    }
}
