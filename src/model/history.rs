//! Fixed-capacity history rings: memory stays bounded however long gpumon runs.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// One reading in time; `value` is `None` when it could not be read (a gap, never a zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Point {
    pub at_ms: u64,
    pub value: Option<u64>,
}

/// The newest `capacity` points, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ring {
    points: VecDeque<Point>,
    capacity: usize,
}

impl Ring {
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(2);
        Ring {
            points: VecDeque::with_capacity(capacity.min(64)),
            capacity,
        }
    }

    pub fn push(&mut self, at_ms: u64, value: Option<u64>) {
        if self.points.len() == self.capacity {
            self.points.pop_front();
        }
        self.points.push_back(Point { at_ms, value });
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

    pub fn last(&self) -> Option<&Point> {
        self.points.back()
    }

    /// Bytes per second between the newest reading and the oldest one at most `window_ms` older.
    /// `None` with fewer than two readings or less than a second between them.
    pub fn rate_per_s(&self, window_ms: u64) -> Option<f64> {
        let (t1, v1) = self
            .points
            .iter()
            .rev()
            .find_map(|p| Some((p.at_ms, p.value?)))?;
        let (t0, v0) = self
            .points
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
