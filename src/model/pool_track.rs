//! A probed process's allocator pool over time: what it allocated, held and stranded, second by
//! second, and when its allocator last flushed its cache to retry. The analysis judges growth on
//! what cannot be released (allocated plus stranded), never on cache.

use crate::model::Ring;
use crate::sample::Pool;

/// Retry times kept: enough to tell one flush from flushes that repeat.
const RETRIES_KEPT: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolTrack {
    /// Bytes in live tensors/buffers.
    pub allocated: Ring,
    /// Bytes the pool holds from CUDA.
    pub reserved: Ring,
    /// Free bytes stuck in split blocks (PyTorch); `None` where the framework has no such figure.
    pub stranded: Ring,
    /// When the allocator's retry count rose (a cache flush), newest last.
    pub retries_at: Vec<u64>,
}

impl PoolTrack {
    pub fn new(capacity: usize) -> Self {
        PoolTrack {
            allocated: Ring::new(capacity),
            reserved: Ring::new(capacity),
            stranded: Ring::new(capacity),
            retries_at: Vec::new(),
        }
    }

    /// One sample's figures (`None`: the probe had none for it then, a gap); `before` is the
    /// previous sample's pool, to see the retry count rise.
    pub fn observe(&mut self, at_ms: u64, pool: Option<&Pool>, before: Option<&Pool>) {
        self.allocated.push(at_ms, pool.and_then(|p| p.allocated));
        self.reserved.push(at_ms, pool.and_then(|p| p.reserved));
        self.stranded.push(at_ms, pool.and_then(|p| p.stranded));
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
}
