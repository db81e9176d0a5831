//! The memory chart's data: the GPU in focus (or the first one) over the history window, as
//! points ready to plot, derived from the machine's rings in the screen's update (never in
//! render). Gaps in a ring split its line into runs, so a missing reading is never drawn as a
//! value. A probed process selected on that GPU gets its pool's story instead (`pool`): device
//! memory, pool, allocated, the stranded part, its limit and the moments of its alerts.
//!
//! The axes fit what is shown: the time axis spans the history there is until the window fills
//! (`span_ms`; a probed process's story: its own life, if shorter), and the y axis the highest reading shown (`Scale::Fit`, rounded up to a round
//! size, never past the GPU's total) or the whole GPU (`Scale::Gpu`); `g` toggles the two.
//! `-` and `+` set the span instead (a minute to three days, `zoom.rs`), drawn from the coarse
//! tiers where it reaches past the fine ring.

mod pool;
mod scale;
pub mod zoom;

use crate::model::{Machine, ProcKey, Ring};
pub use pool::PoolChart;
pub use scale::{Scale, fit_span, nice_top, span_ms};
pub use zoom::Resolution;
use zoom::runs_at;

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
    /// The time axis, seconds (it runs from `-span_s` to 0): the history there is, up to the
    /// window.
    pub span_s: f64,
    /// The same, milliseconds (for its labels).
    pub span_ms: u64,
    /// Total memory, bytes, when known.
    pub total: Option<u64>,
    /// Driver/firmware reserved memory, bytes (n/a with NVML v1).
    pub reserved: Option<u64>,
    /// Used memory over the window.
    pub used: Vec<Run>,
    /// The selected process, when it runs on this GPU: its PID and device memory.
    pub selected: Option<(u32, Vec<Run>)>,
    /// The selected process's pool over the window, when the probe reports one.
    pub pool: Option<PoolChart>,
    /// The y axis's top, bytes.
    pub top: u64,
    pub scale: Scale,
    /// What the series are drawn from: every sample, or a coarse tier's buckets.
    pub resolution: Resolution,
    /// Whether the span was set with the zoom keys (else it fits the history there is).
    pub zoomed: bool,
}

impl ChartData {
    /// The chart of the focused GPU (by UUID), or of the first GPU; `None` without GPUs. `zoom`:
    /// the span the zoom keys set, if they did.
    pub fn of(
        machine: &Machine,
        focus: Option<&str>,
        selected: Option<&ProcKey>,
        scale: Scale,
        zoom: Option<u64>,
    ) -> Option<Self> {
        let gpu = match focus.and_then(|f| machine.gpu(f)) {
            Some(g) => g,
            None => *machine.gpus_in_order().first()?,
        };
        let end = machine.last_sample_ms.unwrap_or(machine.now_ms);
        let span_ms = zoom.unwrap_or_else(|| span_ms(machine));
        // A GPU without tiers (a remote host's, polled without them) is drawn from its samples.
        let resolution = match Resolution::for_span(span_ms, machine.config.history_ms) {
            Resolution::Tier(i) if gpu.used.tier(i).is_none() => Resolution::Samples,
            r => r,
        };
        let track = selected
            .filter(|k| k.gpu_uuid == gpu.sample.uuid)
            .and_then(|k| machine.processes.get(k));
        // A probed process's story covers its own life while that is shorter than the history.
        let pool_span = track.map(|t| {
            let window = machine.config.history_ms.max(1);
            match zoom {
                Some(z) => z,
                None => fit_span(end.saturating_sub(t.first_seen_ms), window).min(span_ms),
            }
        });
        let pool = track
            .zip(pool_span)
            .and_then(|(t, span)| PoolChart::of(machine, t, end, span, resolution));
        let span_ms = match (&pool, pool_span) {
            (Some(_), Some(span)) => span,
            _ => span_ms,
        };
        let selected = track.map(|t| {
            let r = runs_at(&t.history, end, span_ms, resolution);
            (t.sample.pid, r)
        });
        let used = runs_at(&gpu.used, end, span_ms, resolution);
        // What the y axis must hold: the pool's series, else used memory and the selection.
        let shown = match &pool {
            Some(p) => p.highest(),
            None => highest(&used).max(selected.as_ref().map_or(0, |(_, r)| highest(r))),
        };
        let top = match scale {
            Scale::Fit => nice_top(shown, gpu.total),
            Scale::Gpu => gpu.total.unwrap_or(shown).max(1),
        };
        Some(ChartData {
            gpu_index: gpu.sample.index,
            #[allow(clippy::cast_precision_loss)]
            span_s: span_ms as f64 / 1000.0,
            span_ms,
            total: gpu.total,
            reserved: gpu.segments.and_then(|s| s.reserved),
            used,
            selected,
            pool,
            top,
            scale,
            resolution,
            zoomed: zoom.is_some(),
        })
    }
}

/// Bytes as GiB, the chart's unit.
#[allow(clippy::cast_precision_loss)]
pub fn gib(bytes: u64) -> f64 {
    bytes as f64 / GIB
}

/// GiB back to bytes.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub fn bytes(g: f64) -> u64 {
    (g * GIB).round() as u64
}

/// The highest value in some runs, bytes (0 without any).
fn highest(runs: &[Run]) -> u64 {
    bytes(runs.iter().flatten().map(|p| p.1).fold(0.0_f64, f64::max))
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
                push_point(&mut current, (-(age as f64) / 1000.0, gib(v)));
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

/// Appends a point to a run, keeping only the ends of a flat stretch: a point between two of
/// the same value adds no pixel to a line or an area (both are drawn point to point), so a
/// steady reading costs the chart two points, not one a tick.
fn push_point(run: &mut Run, point: (f64, f64)) {
    #[allow(clippy::float_cmp)] // the same reading converted the same way, not a computed value
    if let [.., a, b] = run.as_mut_slice()
        && a.1 == point.1
        && b.1 == point.1
    {
        b.0 = point.0;
        return;
    }
    run.push(point);
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
        assert_eq!(highest(&r), 2 << 30);
    }

    #[test]
    fn a_flat_stretch_keeps_its_ends_and_every_change() {
        let mut ring = Ring::new(10);
        for (t, g) in [
            (0, 1),
            (1, 1),
            (2, 1),
            (3, 1),
            (4, 2),
            (5, 2),
            (6, 2),
            (7, 1),
        ] {
            ring.push(t * 1000, Some(g << 30));
        }
        let r = runs(&ring, 7000, 10_000);
        let expected = vec![
            (-7.0, 1.0),
            (-4.0, 1.0),
            (-3.0, 2.0),
            (-1.0, 2.0),
            (0.0, 1.0),
        ];
        assert_eq!(r, vec![expected]);
    }
}
