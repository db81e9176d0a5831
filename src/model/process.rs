//! One tracked process on one GPU: identity (GPU, PID, start time), latest sample and history.

use crate::model::{GROWTH_WINDOW_MS, PoolTrack, Ring};
use crate::sample::ProcessSample;

/// A process on a GPU; a reused PID has another start time, so it starts a new history.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProcKey {
    pub gpu_uuid: String,
    pub pid: u32,
    /// `None` when /proc could not give it (another PID namespace).
    pub start_time: Option<u64>,
}

impl ProcKey {
    pub fn of(p: &ProcessSample) -> Self {
        ProcKey {
            gpu_uuid: p.gpu_uuid.clone(),
            pid: p.pid,
            start_time: p.start_time.get(),
        }
    }
}

/// A change of device memory between two consecutive readings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    /// Time of the later reading.
    pub at_ms: u64,
    /// Bytes gained (negative when freed).
    pub by: i128,
}

#[derive(Debug, Clone)]
pub struct ProcessTrack {
    pub key: ProcKey,
    pub sample: ProcessSample,
    /// Device memory over the history window.
    pub history: Ring,
    /// Highest device memory seen (since start or the last reset).
    pub peak: Option<u64>,
    /// Bytes per second over the last `GROWTH_WINDOW_MS`: 0 when device memory has not changed
    /// in it (flat), `None` before two readings a second apart.
    pub growth: Option<f64>,
    /// The newest change of device memory between two readings (gaps skipped).
    pub last_change: Option<Change>,
    pub first_seen_ms: u64,
    pub last_seen_ms: u64,
    /// When it stopped being listed.
    pub exited_ms: Option<u64>,
    /// The allocator probe's figures one sample earlier (to see counters rise).
    pub prev_pool: Option<crate::sample::Pool>,
    /// Its pool over the history window, from its first probed sample on (`None`: never probed).
    pub pool_track: Option<PoolTrack>,
}

impl ProcessTrack {
    pub fn new(p: &ProcessSample, at_ms: u64, capacity: usize) -> Self {
        ProcessTrack {
            key: ProcKey::of(p),
            sample: p.clone(),
            history: Ring::new(capacity),
            peak: None,
            growth: None,
            last_change: None,
            first_seen_ms: at_ms,
            last_seen_ms: at_ms,
            exited_ms: None,
            prev_pool: None,
            pool_track: None,
        }
    }

    pub fn observe(&mut self, p: ProcessSample, at_ms: u64) {
        let mem = p.device_memory.get();
        let before = self.history.iter().rev().find_map(|p| p.value);
        if let (Some(b), Some(m)) = (before, mem)
            && b != m
        {
            self.last_change = Some(Change {
                at_ms,
                by: i128::from(m) - i128::from(b),
            });
        }
        self.history.push(at_ms, mem);
        if let Some(m) = mem {
            self.peak = Some(self.peak.map_or(m, |pk| pk.max(m)));
        }
        self.growth = self.history.rate_per_s(GROWTH_WINDOW_MS);
        self.last_seen_ms = at_ms;
        self.exited_ms = None;
        let pool = p.pool.value();
        if pool.is_some() || self.pool_track.is_some() {
            let capacity = self.history.capacity();
            let before = self.sample.pool.value();
            self.pool_track
                .get_or_insert_with(|| PoolTrack::new(capacity))
                .observe(at_ms, pool, before);
        }
        self.prev_pool = std::mem::replace(&mut self.sample, p).pool.value().cloned();
    }

    /// Host VMS over device memory, when both are known and device memory is not zero.
    pub fn vms_ratio(&self) -> Option<f64> {
        let vms = self.sample.vms.get()?;
        let dev = self.sample.device_memory.get().filter(|d| *d > 0)?;
        #[allow(clippy::cast_precision_loss)]
        Some(vms as f64 / dev as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::Reading;
    use crate::source::scripted::build::{GIB, gpu, process};

    /// The growth rule on one jump then flat: the rate counts the jump only while it is inside
    /// the window, then reads 0 (flat); the jump stays known as the last change, with its time.
    #[test]
    fn one_jump_then_flat_reads_flat_after_the_window() {
        let g = gpu(0, 80 * GIB, 0, 0);
        let at = |k: u64| 1_000_000 + k * 1000;
        let mem = |k: u64| if k < 5 { GIB } else { 13 * GIB };
        let sample = |k: u64| {
            let mut p = process(7, &g, mem(k), crate::sample::Framework::Pytorch, "py");
            p.start_time = Reading::Value(1);
            p
        };
        let mut t = ProcessTrack::new(&sample(0), at(0), 1000);
        for k in 0..60 {
            t.observe(sample(k), at(k));
            let since_jump = k.saturating_sub(5) * 1000;
            match k {
                0 => assert_eq!(t.growth, None, "one reading"),
                1..5 => assert_eq!(t.growth, Some(0.0), "flat before the jump"),
                _ if since_jump < GROWTH_WINDOW_MS => {
                    assert!(
                        t.growth.unwrap() > 0.0,
                        "tick {k}: the jump is in the window"
                    );
                }
                _ => assert_eq!(t.growth, Some(0.0), "tick {k}: flat once the jump left"),
            }
        }
        let jump = i128::from(12 * GIB);
        assert_eq!(
            t.last_change,
            Some(Change {
                at_ms: at(5),
                by: jump
            })
        );
    }
}
