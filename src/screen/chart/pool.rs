//! The chart of a probed process: its device memory, its framework's pool (reserved) and what is
//! allocated in it, the stranded part of the pool marked above the allocated line, its limit,
//! and the moments of its alerts and failures, all over the same window.

use super::zoom::{Resolution, runs_at};
use super::{Run, highest, runs};
use crate::model::{Level, Machine, ProcessTrack, Ring};

/// The newest reading of each series, for the legend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolNow {
    pub device: Option<u64>,
    pub reserved: Option<u64>,
    pub allocated: Option<u64>,
    pub stranded: Option<u64>,
    pub limit: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct PoolChart {
    pub pid: u32,
    pub device: Vec<Run>,
    /// What the pool holds from CUDA.
    pub reserved: Vec<Run>,
    pub allocated: Vec<Run>,
    /// Allocated plus stranded, where the probe reports both: the band between it and the
    /// allocated line is the pool's stranded part.
    pub stranded_top: Vec<Run>,
    pub limit: Vec<Run>,
    pub now: PoolNow,
    /// Seconds before the last sample at which alerts about it were raised (risks).
    pub alerts: Vec<f64>,
    /// The same for its allocation failures.
    pub ooms: Vec<f64>,
}

impl PoolChart {
    /// `None` unless the probe has reported the process's pool inside the window. At a coarse
    /// `res`, each series is drawn from floor to peak; the stranded band needs the two readings
    /// of one moment, so it is drawn only from samples, and so is the limit (it has no tiers).
    pub fn of(
        machine: &Machine,
        t: &ProcessTrack,
        end_ms: u64,
        span_ms: u64,
        res: Resolution,
    ) -> Option<Self> {
        let h = t.pool_history.as_ref().filter(|h| h.has_readings())?;
        let reserved = runs_at(&h.reserved, end_ms, span_ms, res);
        let allocated = runs_at(&h.allocated, end_ms, span_ms, res);
        if reserved.is_empty() && allocated.is_empty() {
            return None;
        }
        let mut top = Ring::new(h.allocated.capacity());
        for (a, s) in h.allocated.iter().zip(h.stranded.iter()) {
            top.push(a.at_ms, a.value.zip(s.value).map(|(a, s)| a + s));
        }
        let moments = |failures: bool| -> Vec<f64> {
            machine
                .alerts
                .iter()
                .filter(|a| a.pid == Some(t.sample.pid) && a.level != Level::Notice)
                .filter(|a| a.gpu_uuid.as_ref().is_none_or(|g| *g == t.sample.gpu_uuid))
                .filter(|a| (a.level == Level::Failure) == failures)
                .filter_map(|a| {
                    let age = end_ms.checked_sub(a.at_ms).filter(|age| *age <= span_ms)?;
                    #[allow(clippy::cast_precision_loss)]
                    Some(-(age as f64) / 1000.0)
                })
                .collect()
        };
        let last = |r: &Ring| r.last().and_then(|p| p.value);
        Some(PoolChart {
            pid: t.sample.pid,
            device: runs_at(&t.history, end_ms, span_ms, res),
            reserved,
            allocated,
            stranded_top: match res {
                Resolution::Samples => runs(&top, end_ms, span_ms),
                Resolution::Tier(_) => Vec::new(),
            },
            limit: runs(&h.limit, end_ms, span_ms),
            now: PoolNow {
                device: last(&t.history),
                reserved: last(&h.reserved),
                allocated: last(&h.allocated),
                stranded: last(&h.stranded),
                limit: last(&h.limit),
            },
            alerts: moments(false),
            ooms: moments(true),
        })
    }

    /// The highest reading the y axis must hold (the limit is a reference line: drawn when in
    /// range, never stretching the axis).
    pub fn highest(&self) -> u64 {
        [
            &self.device,
            &self.reserved,
            &self.allocated,
            &self.stranded_top,
        ]
        .into_iter()
        .map(|r| highest(r))
        .max()
        .unwrap_or(0)
    }
}
