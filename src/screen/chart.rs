//! The memory chart's data: the GPU in focus (or the first one) over the history window, as
//! points ready to plot, derived from the machine's rings in the screen's update (never in
//! render). Gaps in a ring split its line into runs, so a missing reading is never drawn as a
//! value.

use crate::model::{Machine, ProcKey, Ring};

/// One contiguous run of points: (seconds before the last sample, GiB).
pub type Run = Vec<(f64, f64)>;

const GIB: f64 = (1u64 << 30) as f64;

/// Whether the chart or the table gets the spare rows (`c` toggles it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Emphasis {
    /// The table shows every process; the chart takes the rows left over.
    #[default]
    Table,
    /// The chart takes the table's spare rows (and, on small screens, the bottom panels').
    Chart,
}

/// What the chart plots.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChartData {
    /// NVML index of the GPU charted.
    pub gpu_index: u32,
    /// The history window, seconds (the x axis runs from `-span_s` to 0).
    pub span_s: f64,
    /// Total memory, bytes (the y axis's top), when known.
    pub total: Option<u64>,
    /// Driver/firmware reserved memory, bytes (n/a with NVML v1).
    pub reserved: Option<u64>,
    /// Used memory over the window.
    pub used: Vec<Run>,
    /// The highest used reading in the window, bytes (the y axis's top when total is unknown).
    pub used_max: u64,
    /// The selected process, when it runs on this GPU: its PID and device memory.
    pub selected: Option<(u32, Vec<Run>)>,
}

impl ChartData {
    /// The chart of the focused GPU (by UUID), or of the first GPU; `None` without GPUs.
    pub fn of(machine: &Machine, focus: Option<&str>, selected: Option<&ProcKey>) -> Option<Self> {
        let gpu = match focus.and_then(|f| machine.gpu(f)) {
            Some(g) => g,
            None => *machine.gpus_in_order().first()?,
        };
        let end = machine.last_sample_ms.unwrap_or(machine.now_ms);
        let span_ms = machine.config.history_ms.max(1);
        let selected = selected
            .filter(|k| k.gpu_uuid == gpu.sample.uuid)
            .and_then(|k| machine.processes.get(k))
            .map(|t| (t.sample.pid, runs(&t.history, end, span_ms)));
        Some(ChartData {
            gpu_index: gpu.sample.index,
            #[allow(clippy::cast_precision_loss)]
            span_s: span_ms as f64 / 1000.0,
            total: gpu.total,
            reserved: gpu.segments.and_then(|s| s.reserved),
            used: runs(&gpu.used, end, span_ms),
            used_max: gpu.used.iter().filter_map(|p| p.value).max().unwrap_or(0),
            selected,
        })
    }
}

/// Bytes as GiB, the chart's unit.
#[allow(clippy::cast_precision_loss)]
pub fn gib(bytes: u64) -> f64 {
    bytes as f64 / GIB
}

/// The ring's readings inside the window ending at `end_ms`, split at gaps.
fn runs(ring: &Ring, end_ms: u64, span_ms: u64) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::new();
    let mut current: Run = Vec::new();
    for p in ring.iter() {
        let age = end_ms.saturating_sub(p.at_ms);
        match p.value {
            Some(v) if age <= span_ms && p.at_ms <= end_ms => {
                #[allow(clippy::cast_precision_loss)]
                current.push((-(age as f64) / 1000.0, gib(v)));
            }
            _ => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_split_the_line_and_old_points_fall_out() {
        let mut ring = Ring::new(10);
        for (t, v) in [
            (0, Some(1 << 30)),
            (5, Some(2 << 30)),
            (6, None),
            (7, Some(1 << 30)),
        ] {
            ring.push(t * 1000, v);
        }
        let r = runs(&ring, 7000, 5000);
        assert_eq!(r, vec![vec![(-2.0, 2.0)], vec![(0.0, 1.0)]]);
    }
}
