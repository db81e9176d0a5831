//! A probed process's allocator pool over the history window: allocated, reserved (the pool),
//! stranded, the probe's peak and limit, one ring each, pushed with its device memory in
//! `ProcessTrack::observe`; all but the limit with coarse tiers behind them (days of history).
//!
//! A tick without probe figures is a gap in every ring (never a zero), so a probe file that
//! went stale splits the chart's lines instead of dropping them to the floor.

use crate::model::Ring;
use crate::sample::Pool;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolHistory {
    /// Bytes in live tensors/buffers.
    pub allocated: Ring,
    /// Bytes the pool holds from CUDA.
    pub reserved: Ring,
    /// Free bytes stuck in partly used blocks, where the framework reports them.
    pub stranded: Ring,
    /// The probe's high-water mark of allocated bytes (`peak_allocated`: since the process started
    /// or the job last reset it, what the largest step needed), where it reports one.
    pub peak: Ring,
    /// The pool's cap, where it has one (fine points only: it rarely changes).
    pub limit: Ring,
    /// When the allocator's retry count rose (a cache flush), newest last, at most
    /// `RETRIES_KEPT`: enough to tell one flush from flushes that repeat.
    pub retries_at: Vec<u64>,
}

const RETRIES_KEPT: usize = 8;

impl PoolHistory {
    pub fn new(capacity: usize) -> Self {
        PoolHistory {
            allocated: Ring::with_tiers(capacity),
            reserved: Ring::with_tiers(capacity),
            stranded: Ring::with_tiers(capacity),
            peak: Ring::with_tiers(capacity),
            limit: Ring::new(capacity),
            retries_at: Vec::new(),
        }
    }

    /// The probe's figures at `at_ms`; `None` (no figures this tick) is a gap in every ring.
    /// `before` is the previous sample's pool, to see the retry count rise.
    pub fn push(&mut self, at_ms: u64, pool: Option<&Pool>, before: Option<&Pool>) {
        self.allocated.push(at_ms, pool.and_then(|p| p.allocated));
        self.reserved.push(at_ms, pool.and_then(|p| p.reserved));
        self.stranded.push(at_ms, pool.and_then(|p| p.stranded));
        self.peak.push(at_ms, pool.and_then(|p| p.peak_allocated));
        self.limit.push(at_ms, pool.and_then(|p| p.limit));
        let rose = match (
            pool.and_then(|p| p.alloc_retries),
            before.and_then(|p| p.alloc_retries),
        ) {
            (Some(now), Some(then)) => now > then,
            _ => false,
        };
        if rose {
            if self.retries_at.len() == RETRIES_KEPT {
                self.retries_at.remove(0);
            }
            self.retries_at.push(at_ms);
        }
    }

    /// Cache flushes within `window_ms` before `now_ms`.
    pub fn retries_within(&self, now_ms: u64, window_ms: u64) -> usize {
        self.retries_at
            .iter()
            .filter(|t| now_ms.saturating_sub(**t) <= window_ms)
            .count()
    }

    /// Whether any ring holds a reading (a history of gaps only says nothing).
    pub fn has_readings(&self) -> bool {
        [&self.allocated, &self.reserved]
            .iter()
            .any(|r| r.iter().any(|p| p.value.is_some()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::Framework;

    fn pool(allocated: u64, reserved: u64, stranded: Option<u64>) -> Pool {
        Pool {
            framework: Framework::Pytorch,
            version: None,
            at_ms: 0,
            allocated: Some(allocated),
            reserved: Some(reserved),
            cached_free: Some(reserved - allocated),
            stranded,
            largest_free_block: None,
            largest_alloc: None,
            limit: None,
            peak_allocated: None,
            peak_reserved: None,
            alloc_retries: None,
            ooms: None,
        }
    }

    #[test]
    fn a_tick_without_figures_is_a_gap_not_a_zero() {
        let mut h = PoolHistory::new(10);
        h.push(1000, Some(&pool(1, 4, Some(2))), None);
        h.push(2000, None, None);
        h.push(3000, Some(&pool(2, 4, None)), None);
        let values = |r: &Ring| r.iter().map(|p| p.value).collect::<Vec<_>>();
        assert_eq!(values(&h.allocated), vec![Some(1), None, Some(2)]);
        assert_eq!(values(&h.reserved), vec![Some(4), None, Some(4)]);
        assert_eq!(values(&h.stranded), vec![Some(2), None, None]);
        assert_eq!(values(&h.limit), vec![None, None, None]);
        assert!(h.has_readings());
        assert!(!PoolHistory::new(3).has_readings());
    }
}
