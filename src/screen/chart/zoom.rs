//! How far back the chart reaches (`-` zooms out, `+` in: a minute to three days) and the
//! resolution it draws at: every sample while the span fits the fine ring (`--history`), else
//! the finest coarse tier that covers it (10 s buckets up to 6 hours, 1-minute ones beyond).
//! A coarse bucket is drawn from its floor to its peak, and buckets are merged (lowest floor,
//! highest peak) so the chart never gets more points than a wide terminal has columns.

use super::{Run, gib, push_point};
use crate::model::{Ring, TIERS};

/// The spans the zoom keys step through, ms.
pub const ZOOMS: [u64; 9] = [
    60_000,
    5 * 60_000,
    10 * 60_000,
    30 * 60_000,
    3_600_000,
    6 * 3_600_000,
    12 * 3_600_000,
    24 * 3_600_000,
    72 * 3_600_000,
];

/// Points of a coarse series at most (merged buckets beyond).
const MAX_COLUMNS: usize = 400;

/// What the chart draws from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Resolution {
    /// The ring's own points, every sample.
    #[default]
    Samples,
    /// Coarse tier `i` (`model::TIERS[i]`): its buckets' floors and peaks.
    Tier(usize),
}

impl Resolution {
    /// The finest resolution that covers `span_ms` when the fine ring covers `history_ms`.
    pub fn for_span(span_ms: u64, history_ms: u64) -> Self {
        if span_ms <= history_ms {
            return Resolution::Samples;
        }
        let i = TIERS
            .iter()
            .position(|r| r.span_ms >= span_ms)
            .unwrap_or(TIERS.len() - 1);
        Resolution::Tier(i)
    }

    /// How the title says it: "every sample", "10s buckets, floor to peak".
    pub fn label(self) -> String {
        match self {
            Resolution::Samples => "every sample".into(),
            Resolution::Tier(i) => format!(
                "{} buckets, floor to peak",
                crate::model::units::duration_label(TIERS[i].bucket_ms)
            ),
        }
    }
}

/// The next span out (`out`) or in from `span_ms`; the same at either end.
pub fn step(span_ms: u64, out: bool) -> u64 {
    if out {
        ZOOMS.iter().copied().find(|z| *z > span_ms)
    } else {
        ZOOMS.iter().rev().copied().find(|z| *z < span_ms)
    }
    .unwrap_or(span_ms)
}

/// The ring's readings inside the window ending at `end_ms`, at `res`, split at gaps; a ring
/// without tiers (a remote host's, polled without them) gives the samples it has.
pub fn runs_at(ring: &Ring, end_ms: u64, span_ms: u64, res: Resolution) -> Vec<Run> {
    match res {
        Resolution::Tier(i) if let Some(t) = ring.tier(i) => coarse_runs(t, end_ms, span_ms),
        _ => super::runs(ring, end_ms, span_ms),
    }
}

/// A tier's buckets inside the window, merged `k` at a time to at most `MAX_COLUMNS`, each drawn
/// as its floor then its peak at its middle; a bucket without readings splits the line.
fn coarse_runs(t: &crate::model::Tier, end_ms: u64, span_ms: u64) -> Vec<Run> {
    let w = t.bucket_ms();
    let from = end_ms.saturating_sub(span_ms);
    let buckets: Vec<_> = t
        .since(from.saturating_sub(from % w))
        .take_while(|b| b.at_ms <= end_ms)
        .collect();
    let k = buckets.len().div_ceil(MAX_COLUMNS).max(1);
    let mut out: Vec<Run> = Vec::new();
    let mut current: Run = Vec::new();
    for group in buckets.chunks(k) {
        let low = group.iter().filter_map(|b| b.min).min();
        let high = group.iter().filter_map(|b| b.max).max();
        let mid = group[0].at_ms.saturating_add(w * group.len() as u64 / 2);
        #[allow(clippy::cast_precision_loss)]
        let x = -(end_ms.saturating_sub(mid) as f64) / 1000.0;
        match low.zip(high) {
            Some((lo, hi)) => {
                push_point(&mut current, (x, gib(lo)));
                push_point(&mut current, (x, gib(hi)));
            }
            None => {
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
    fn a_span_is_drawn_at_the_finest_resolution_that_covers_it() {
        let ten_min = 600_000;
        assert_eq!(Resolution::for_span(60_000, ten_min), Resolution::Samples);
        assert_eq!(Resolution::for_span(ten_min, ten_min), Resolution::Samples);
        assert_eq!(
            Resolution::for_span(3_600_000, ten_min),
            Resolution::Tier(0)
        );
        assert_eq!(
            Resolution::for_span(24 * 3_600_000, ten_min),
            Resolution::Tier(1)
        );
        assert_eq!(Resolution::Tier(0).label(), "10s buckets, floor to peak");
        assert_eq!(step(600_000, true), 30 * 60_000);
        assert_eq!(step(600_000, false), 5 * 60_000);
        assert_eq!(step(60_000, false), 60_000);
        assert_eq!(step(72 * 3_600_000, true), 72 * 3_600_000);
    }

    #[test]
    fn coarse_runs_keep_floors_peaks_and_gaps_and_stay_few() {
        let mut ring = Ring::with_tiers(10);
        let t0 = 1_000_000_000_000;
        // Two hours a second: 1 GiB, with a 3 GiB spike every 10 minutes; a silent 20 minutes.
        for s in 0..7200u64 {
            if (3000..4200).contains(&s) {
                continue;
            }
            let v = if s % 600 == 0 { 3 << 30 } else { 1 << 30 };
            ring.push(t0 + s * 1000, Some(v));
        }
        let end = t0 + 7_199_000;
        let runs = runs_at(&ring, end, 2 * 3_600_000, Resolution::Tier(0));
        assert_eq!(runs.len(), 2, "the silence splits the line");
        let ys: Vec<f64> = runs.iter().flatten().map(|p| p.1).collect();
        assert!(
            ys.contains(&3.0) && ys.contains(&1.0),
            "peaks and floors survive"
        );
        assert!(runs.iter().map(Vec::len).sum::<usize>() <= 2 * MAX_COLUMNS);
        // A ring without tiers (a remote host's) draws the samples it has.
        let mut fine = Ring::new(10);
        fine.push(end, Some(1 << 30));
        let runs = runs_at(&fine, end, 2 * 3_600_000, Resolution::Tier(0));
        assert_eq!(runs, vec![vec![(0.0, 1.0)]]);
    }
}
