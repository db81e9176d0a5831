//! Fixed-capacity history rings: memory stays bounded however long gpumon runs.
//!
//! Besides its points, a ring keeps what the analysis asks of it every tick, updated as points
//! come and go (O(1) amortised per push): the largest and the latest increase between
//! consecutive readings, and whether its times are in order (so windows are found by binary
//! search instead of a scan). A ring with coarse tiers also remembers the last trend found in
//! their complete windows (`Ring::trend_memo`), asked again only once a tier's newest bucket
//! has moved on: complete buckets never change.

use std::cell::Cell;
use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::model::tiers::{Tier, Tiers};

/// One reading in time; `value` is `None` when it could not be read (a gap, never a zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Point {
    pub at_ms: u64,
    pub value: Option<u64>,
}

/// An increase between two consecutive readings (gaps skipped).
#[derive(Debug, Clone, Copy)]
struct Step {
    /// Sequence number of the earlier reading: the step leaves the ring with it.
    from: u64,
    /// Time of the later reading.
    at_ms: u64,
    by: u64,
}

/// A certain climb of a ring's floors, as `analysis::growth::slow` finds it in the ring's coarse
/// tiers: the floor rose from `from` to `to` over `windows` windows of `window_ms`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trend {
    pub from: u64,
    pub to: u64,
    pub windows: usize,
    pub window_ms: u64,
    /// Bytes per second.
    pub rate: f64,
}

impl Trend {
    pub fn span_ms(&self) -> u64 {
        self.window_ms * (self.windows as u64).saturating_sub(1)
    }
}

/// What a trend of the tiers' complete windows depends on: the time before which nothing counts,
/// and each tier's newest bucket (its start) and length.
type TrendKey = (u64, Option<u64>, Option<u64>, usize, usize);

/// The newest `capacity` points, oldest first.
#[derive(Debug, Clone)]
pub struct Ring {
    points: VecDeque<Point>,
    capacity: usize,
    /// Sequence number of the oldest point (points pushed before it have left).
    head: u64,
    /// Neighbouring points whose times go backwards.
    disorder: usize,
    /// The newest reading: (sequence number, time, value).
    last_reading: Option<(u64, u64, u64)>,
    /// Steps in the ring whose increase is larger than every later one's: the front is the
    /// largest step in the ring (a monotonic queue).
    largest: VecDeque<Step>,
    /// The newest step still in the ring.
    latest: Option<Step>,
    /// The coarse tiers behind the points (`Ring::with_tiers`), reaching back days.
    tiers: Option<Box<Tiers>>,
    /// The last trend found in the tiers, and what it was found of.
    trend_memo: Cell<Option<(TrendKey, Option<Trend>)>>,
}

impl PartialEq for Ring {
    fn eq(&self, other: &Self) -> bool {
        self.capacity == other.capacity && self.points == other.points
    }
}

impl Eq for Ring {}

impl Ring {
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(2);
        Ring {
            points: VecDeque::with_capacity(capacity.min(64)),
            capacity,
            head: 0,
            disorder: 0,
            last_reading: None,
            largest: VecDeque::new(),
            latest: None,
            tiers: None,
            trend_memo: Cell::new(None),
        }
    }

    /// A ring with coarse tiers behind its points: every reading pushed goes into both.
    pub fn with_tiers(capacity: usize) -> Self {
        Ring {
            tiers: Some(Box::default()),
            ..Ring::new(capacity)
        }
    }

    /// A ring rebuilt from its points and tiers (a snapshot's): the points do not go into the
    /// tiers again.
    pub fn restore(capacity: usize, points: &[Point], tiers: Option<Tiers>) -> Self {
        let mut ring = Ring::new(capacity.max(points.len()));
        for p in points {
            ring.push(p.at_ms, p.value);
        }
        ring.tiers = tiers.map(Box::new);
        ring
    }

    /// The trend `find` finds in the tiers' complete windows from `since_ms` on: remembered,
    /// and found again only once `since_ms` or a tier's newest bucket has changed (the bucket
    /// still filling, the only one a reading changes, is never part of a complete window).
    pub fn trend_memo(&self, since_ms: u64, find: impl FnOnce() -> Option<Trend>) -> Option<Trend> {
        let Some(t) = &self.tiers else {
            return find();
        };
        let newest = |i: usize| t.0[i].newest().map(|b| b.at_ms);
        let key = (since_ms, newest(0), newest(1), t.0[0].len(), t.0[1].len());
        if let Some((k, found)) = self.trend_memo.get()
            && k == key
        {
            return found;
        }
        let found = find();
        self.trend_memo.set(Some((key, found)));
        found
    }

    /// Tier `i` (0: the finest coarse tier), when the ring has tiers.
    pub fn tier(&self, i: usize) -> Option<&Tier> {
        self.tiers.as_ref().and_then(|t| t.0.get(i))
    }

    pub fn push(&mut self, at_ms: u64, value: Option<u64>) {
        if let Some(t) = &mut self.tiers {
            t.push(at_ms, value);
        }
        if self.points.len() == self.capacity {
            self.pop_front();
        } else if self.points.len() == self.points.capacity() {
            // Grow towards the capacity, never past it (a doubling would overshoot it).
            let len = self.points.len();
            self.points
                .reserve_exact(len.min(self.capacity - len).max(1));
        }
        let seq = self.head + self.points.len() as u64;
        if self.points.back().is_some_and(|b| at_ms < b.at_ms) {
            self.disorder += 1;
        }
        self.points.push_back(Point { at_ms, value });
        let Some(v) = value else { return };
        if let Some((from, _, before)) = self.last_reading
            && let Some(by) = v.checked_sub(before).filter(|d| *d > 0)
        {
            let step = Step { from, at_ms, by };
            while self.largest.back().is_some_and(|s| s.by <= by) {
                self.largest.pop_back();
            }
            self.largest.push_back(step);
            self.latest = Some(step);
        }
        self.last_reading = Some((seq, at_ms, v));
    }

    fn pop_front(&mut self) {
        let Some(old) = self.points.pop_front() else {
            return;
        };
        if self.points.front().is_some_and(|f| f.at_ms < old.at_ms) {
            self.disorder -= 1;
        }
        self.head += 1;
        let head = self.head;
        while self.largest.front().is_some_and(|s| s.from < head) {
            self.largest.pop_front();
        }
        if self.latest.is_some_and(|s| s.from < head) {
            self.latest = None;
        }
        if self.last_reading.is_some_and(|(seq, _, _)| seq < head) {
            self.last_reading = None;
        }
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Point> + ExactSizeIterator {
        self.points.iter()
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Points the ring has room for without reallocating (at most `capacity`).
    pub fn allocated(&self) -> usize {
        self.points.capacity()
    }

    pub fn last(&self) -> Option<&Point> {
        self.points.back()
    }

    /// The newest point (in ring order) taken at or before `at_ms`.
    pub fn last_at_or_before(&self, at_ms: u64) -> Option<&Point> {
        if self.in_time_order() {
            let n = self.points.partition_point(|p| p.at_ms <= at_ms);
            n.checked_sub(1).and_then(|i| self.points.get(i))
        } else {
            self.points.iter().rev().find(|p| p.at_ms <= at_ms)
        }
    }

    /// Whether the times of the points never go backwards (they do only if the clock did).
    pub fn in_time_order(&self) -> bool {
        self.disorder == 0
    }

    /// The largest increase between consecutive readings in the ring (gaps skipped).
    pub fn largest_step(&self) -> Option<u64> {
        self.largest.front().map(|s| s.by)
    }

    /// The newest increase between consecutive readings: (time of the later one, increase).
    pub fn latest_step(&self) -> Option<(u64, u64)> {
        self.latest.map(|s| (s.at_ms, s.by))
    }

    /// Bytes per second between the newest reading and the oldest one at most `window_ms` older.
    /// `None` with fewer than two readings or less than a second between them.
    pub fn rate_per_s(&self, window_ms: u64) -> Option<f64> {
        let (_, t1, v1) = self.last_reading?;
        let within = |p: &Point| t1.saturating_sub(p.at_ms) <= window_ms;
        // In time order, the points within the window are a suffix: find it by bisection.
        let first = if self.in_time_order() {
            self.points.partition_point(|p| !within(p))
        } else {
            0
        };
        let (t0, v0) = self
            .points
            .range(first..)
            .filter(|p| within(p))
            .find_map(|p| Some((p.at_ms, p.value?)))?;
        let dt = t1.checked_sub(t0)?;
        if dt < 1000 {
            return None;
        }
        #[allow(clippy::cast_precision_loss)]
        Some((v1 as f64 - v0 as f64) * 1000.0 / dt as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trend_is_found_again_only_when_a_coarse_bucket_completes() {
        let mut r = Ring::with_tiers(10);
        let found = std::cell::Cell::new(0);
        let find = || {
            found.set(found.get() + 1);
            None
        };
        r.push(0, Some(1));
        r.trend_memo(0, find);
        // Readings into the bucket still filling (10 s buckets) change no complete window.
        for t in [1_000, 5_000, 9_999] {
            r.push(t, Some(t));
            r.trend_memo(0, find);
        }
        assert_eq!(found.get(), 1);
        r.push(10_000, Some(3));
        r.trend_memo(0, find);
        r.trend_memo(30_000, find);
        assert_eq!(found.get(), 3, "a new bucket, another start");
        assert_eq!(Ring::new(3).trend_memo(0, find), None);
        assert_eq!(found.get(), 4, "a ring without tiers remembers nothing");
    }

    #[test]
    fn keeps_only_the_newest() {
        let mut r = Ring::new(3);
        for t in 0..5 {
            r.push(t, Some(t));
        }
        let ts: Vec<u64> = r.iter().map(|p| p.at_ms).collect();
        assert_eq!(ts, vec![2, 3, 4]);
    }

    #[test]
    fn rate_skips_gaps_and_needs_a_second() {
        let mut r = Ring::new(100);
        r.push(0, Some(0));
        r.push(500, Some(1000));
        assert_eq!(r.rate_per_s(60_000), None);
        r.push(1000, None);
        r.push(2000, Some(4000));
        assert_eq!(r.rate_per_s(60_000), Some(2000.0));
        assert_eq!(r.rate_per_s(1500), Some(3000.0 / 1.5));
    }

    /// The increases between consecutive readings, as the analysis computed them before the
    /// ring kept them: (time of the later reading, increase).
    fn steps_by_scan(r: &Ring) -> Vec<(u64, u64)> {
        let vals: Vec<(u64, u64)> = r.iter().filter_map(|p| Some((p.at_ms, p.value?))).collect();
        (1..vals.len())
            .filter_map(|i| {
                let d = vals[i].1.checked_sub(vals[i - 1].1)?;
                (d > 0).then_some((vals[i].0, d))
            })
            .collect()
    }

    /// `rate_per_s` by a plain scan of the points.
    fn rate_by_scan(r: &Ring, window_ms: u64) -> Option<f64> {
        let (t1, v1) = r.iter().rev().find_map(|p| Some((p.at_ms, p.value?)))?;
        let (t0, v0) = r
            .iter()
            .filter(|p| t1.saturating_sub(p.at_ms) <= window_ms)
            .find_map(|p| Some((p.at_ms, p.value?)))?;
        let dt = t1.checked_sub(t0)?;
        if dt < 1000 {
            return None;
        }
        #[allow(clippy::cast_precision_loss)]
        Some((v1 as f64 - v0 as f64) * 1000.0 / dt as f64)
    }

    proptest::proptest! {
        #[test]
        fn kept_figures_match_a_scan(
            capacity in 2usize..12,
            pushes in proptest::collection::vec(
                (0u64..4, proptest::option::weighted(0.8, 0u64..50), proptest::bool::weighted(0.05)),
                0..80,
            ),
        ) {
            let mut r = Ring::new(capacity);
            let mut t = 10_000u64;
            for (dt, v, back) in pushes {
                // Mostly forward in time, now and then backwards (a clock set back).
                t = if back { t.saturating_sub(3000) } else { t + dt * 700 };
                r.push(t, v);
                let steps = steps_by_scan(&r);
                proptest::prop_assert_eq!(r.largest_step(), steps.iter().map(|s| s.1).max());
                proptest::prop_assert_eq!(r.latest_step(), steps.last().copied());
                let ordered = r.iter().zip(r.iter().skip(1)).all(|(a, b)| a.at_ms <= b.at_ms);
                proptest::prop_assert_eq!(r.in_time_order(), ordered);
                for at in [0, t.saturating_sub(2000), t] {
                    proptest::prop_assert_eq!(
                        r.last_at_or_before(at),
                        r.iter().rev().find(|p| p.at_ms <= at)
                    );
                }
                for w in [0, 1000, 2500, 60_000] {
                    proptest::prop_assert_eq!(r.rate_per_s(w), rate_by_scan(&r, w));
                }
                proptest::prop_assert!(r.allocated() <= capacity);
            }
        }
    }
}
