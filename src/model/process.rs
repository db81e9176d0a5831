//! One tracked process on one GPU: identity (GPU, PID, start time), latest sample and history.

use crate::model::{GROWTH_WINDOW_MS, Ring};
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

#[derive(Debug, Clone)]
pub struct ProcessTrack {
    pub key: ProcKey,
    pub sample: ProcessSample,
    /// Device memory over the history window.
    pub history: Ring,
    /// Highest device memory seen (since start or the last reset).
    pub peak: Option<u64>,
    /// Bytes per second over the last minute.
    pub growth: Option<f64>,
    pub first_seen_ms: u64,
    pub last_seen_ms: u64,
    /// When it stopped being listed.
    pub exited_ms: Option<u64>,
    /// The allocator probe's figures one sample earlier (to see counters rise).
    pub prev_pool: Option<crate::sample::Pool>,
}

impl ProcessTrack {
    pub fn new(p: &ProcessSample, at_ms: u64, capacity: usize) -> Self {
        ProcessTrack {
            key: ProcKey::of(p),
            sample: p.clone(),
            history: Ring::new(capacity),
            peak: None,
            growth: None,
            first_seen_ms: at_ms,
            last_seen_ms: at_ms,
            exited_ms: None,
            prev_pool: None,
        }
    }

    pub fn observe(&mut self, p: ProcessSample, at_ms: u64) {
        let mem = p.device_memory.get();
        self.history.push(at_ms, mem);
        if let Some(m) = mem {
            self.peak = Some(self.peak.map_or(m, |pk| pk.max(m)));
        }
        self.growth = self.history.rate_per_s(GROWTH_WINDOW_MS);
        self.last_seen_ms = at_ms;
        self.exited_ms = None;
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
