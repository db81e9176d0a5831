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
