//! Sparklines over a history ring: one column per slice of time, gaps left blank (never drawn as
//! zero), failures marked at the column where they happened. They span what the chart spans:
//! zoomed out past the fine ring (`-`), a column is the highest peak of the coarse buckets in it.

use ratatui::text::Span;

use super::theme::Theme;
use crate::model::{Ring, TIERS};
use crate::screen::State;
use crate::screen::chart::{Resolution, nice_top, span_ms};

/// The time the chart and the sparklines cover: the zoom's span, else the history there is.
pub fn shown_span(state: &State) -> u64 {
    state
        .screen
        .zoom
        .unwrap_or_else(|| span_ms(state.machine()))
}

/// The time a sparkline covers, cut into `width` equal columns ending at `end_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub end_ms: u64,
    pub span_ms: u64,
    pub width: usize,
    /// Every sample, or a coarse tier's buckets (the chart's zoom).
    pub resolution: Resolution,
}

impl Window {
    /// The history there is of the machine in view, up to its window (as the chart's time
    /// axis: `screen::chart::span_ms`), at most `avail` columns and never more columns than
    /// samples fit in it (so a column is never empty between two samples). It ends at the last
    /// sample, so a paused screen stands still.
    pub fn of(state: &State, avail: usize) -> Self {
        let machine = state.machine();
        let span_ms = state.screen.zoom.unwrap_or_else(|| span_ms(machine)).max(1);
        let resolution = Resolution::for_span(span_ms, machine.config.history_ms);
        let step = match resolution {
            Resolution::Samples => machine.config.interval_ms,
            Resolution::Tier(i) => TIERS[i].bucket_ms,
        };
        let samples = usize::try_from(span_ms / step.max(1)).unwrap_or(usize::MAX);
        Window {
            end_ms: machine.last_sample_ms.unwrap_or(machine.now_ms),
            span_ms,
            width: avail.min(samples).max(1),
            resolution,
        }
    }

    /// The column of a moment, if it lies inside the window.
    pub fn column(&self, at_ms: u64) -> Option<usize> {
        let age = self.end_ms.checked_sub(at_ms)?;
        let back = u128::from(age) * self.width as u128 / u128::from(self.span_ms);
        let back = usize::try_from(back).ok().filter(|b| *b < self.width)?;
        Some(self.width - 1 - back)
    }

    /// The highest reading in each column; `None` where there was none. A column no point fell
    /// in, between two with readings, lies between two samples whose times drifted across it: it
    /// shows its left neighbour (a gap is a point without a reading, and stays blank).
    pub fn columns(&self, ring: &Ring) -> Vec<Option<u64>> {
        let mut cols = vec![None; self.width];
        let mut touched = vec![false; self.width];
        if let Resolution::Tier(i) = self.resolution
            && let Some(tier) = ring.tier(i)
        {
            let w = tier.bucket_ms();
            for b in tier.since(self.end_ms.saturating_sub(self.span_ms.saturating_add(w))) {
                let Some(col) = self.column(b.at_ms.saturating_add(w / 2)) else {
                    continue;
                };
                if let Some(v) = b.max {
                    cols[col] = Some(cols[col].map_or(v, |old: u64| old.max(v)));
                }
            }
            return cols;
        }
        for p in ring.iter() {
            let Some(col) = self.column(p.at_ms) else {
                continue;
            };
            touched[col] = true;
            if let Some(v) = p.value {
                let c: &mut Option<u64> = &mut cols[col];
                *c = Some(c.map_or(v, |old| old.max(v)));
            }
        }
        for i in 1..self.width.saturating_sub(1) {
            if !touched[i] && cols[i - 1].is_some() && cols[i + 1].is_some() {
                cols[i] = cols[i - 1];
            }
        }
        cols
    }
}

/// The sparkline of `ring`, scaled from 0 to `top` (or fitted to its highest reading as the
/// chart's axis is: `screen::chart::nice_top`), with `marks_ms` marked.
pub fn spans(
    ring: &Ring,
    window: Window,
    top: Option<u64>,
    marks_ms: &[u64],
    theme: &Theme,
) -> Vec<Span<'static>> {
    let cols = window.columns(ring);
    let marks: Vec<usize> = marks_ms.iter().filter_map(|t| window.column(*t)).collect();
    let ramp = theme.g.ramp;
    let max =
        top.unwrap_or_else(|| nice_top(cols.iter().flatten().max().copied().unwrap_or(0), None));
    let mut out: Vec<Span<'static>> = Vec::new();
    let mut run = String::new();
    for (i, col) in cols.iter().enumerate() {
        if marks.contains(&i) {
            if !run.is_empty() {
                out.push(Span::styled(std::mem::take(&mut run), theme.spark));
            }
            out.push(Span::styled(theme.g.mark.to_string(), theme.mark));
            continue;
        }
        run.push(match col {
            None => ' ',
            Some(v) => ramp[level(*v, max, ramp.len())],
        });
    }
    if !run.is_empty() {
        out.push(Span::styled(run, theme.spark));
    }
    out
}

/// Index into a ramp of `levels` for `v` on a scale from 0 to `max`, rounded.
fn level(v: u64, max: u64, levels: usize) -> usize {
    if max == 0 {
        return 0;
    }
    let top = levels as u128 - 1;
    let l = (u128::from(v) * top + u128::from(max) / 2) / u128::from(max);
    usize::try_from(l.min(top)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Config;

    fn theme() -> Theme {
        Theme::new(&Config::new(1000, 10_000))
    }

    fn text(spans: &[Span]) -> String {
        spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn columns_are_slices_of_time_and_gaps_stay_blank() {
        let mut ring = Ring::new(20);
        for (t, v) in [
            (5, Some(0)),
            (6, Some(4)),
            (7, None),
            (8, Some(8)),
            (9, Some(8)),
        ] {
            ring.push(t * 1000, v);
        }
        let w = Window {
            end_ms: 9000,
            span_ms: 10_000,
            width: 10,
            resolution: Resolution::Samples,
        };
        assert_eq!(w.column(9000), Some(9));
        assert_eq!(w.column(0), Some(0));
        assert_eq!(w.column(9001), None);
        // Fitted: the top is a round size just above the highest reading (10 for 8).
        assert_eq!(text(&spans(&ring, w, None, &[], &theme())), "     ▁▄ ▇▇");
        assert_eq!(
            text(&spans(&ring, w, None, &[6000], &theme())),
            "     ▁! ▇▇"
        );
        assert_eq!(
            text(&spans(&ring, w, Some(16), &[], &theme())),
            "     ▁▃ ▅▅"
        );
    }

    /// Samples whose times drift across a column leave it without a point: it is no gap.
    #[test]
    fn a_column_between_drifting_samples_is_not_a_gap() {
        let mut ring = Ring::new(20);
        for (t, v) in [
            (3000, Some(2)),
            (4100, Some(4)),
            (5000, Some(4)),
            (7000, None),
            (8000, Some(4)),
        ] {
            ring.push(t, v);
        }
        let w = Window {
            end_ms: 9000,
            span_ms: 10_000,
            width: 10,
            resolution: Resolution::Samples,
        };
        let cols = w.columns(&ring);
        assert_eq!(cols[4], Some(2), "between two samples: {cols:?}");
        assert_eq!(
            cols[7], None,
            "a point without a reading stays a gap: {cols:?}"
        );
    }

    #[test]
    fn wide_columns_take_the_highest_reading() {
        let mut ring = Ring::new(20);
        for t in 0..10 {
            ring.push(t * 1000, Some(t));
        }
        let w = Window {
            end_ms: 9000,
            span_ms: 10_000,
            width: 5,
            resolution: Resolution::Samples,
        };
        assert_eq!(
            w.columns(&ring),
            vec![Some(1), Some(3), Some(5), Some(7), Some(9)]
        );
    }
}
