//! A compact text timeline of one process, 80 columns wide: its allocated memory, pool and
//! device memory as rows of bars on one scale, and a row marking the moments of its alerts
//! (`!`) and failures (`X`), over the time around them (or its whole history without any).
//! `gpumon explain` prints one for each process a recording's alerts name, `snapshot --format
//! text` one for the selected process.
//!
//! ```text
//!   pid 5230 from 09:46:55 to 09:47:09 UTC, 1s a column, bars from 0 to 9.5G
//!   allocated   4.0G ▃▃▃▃▃▃▃▃▃▃▃▃▃▃
//!   pool        9.0G ▇▇▇▇▇▇▇▇▇▇▇▇▇▇
//!   device      9.5G ██████████████
//!   alerts           ........X.....   ! alert  X OOM
//! ```

use super::Point;
use super::lines::WIDTH;
use crate::model::units;

/// Columns before the bars: two of indent, the name, the newest value.
const LABEL: usize = 2 + 10 + 6 + 1;
/// Time kept before the first moment and after the last.
const BEFORE_MS: u64 = 30_000;
const AFTER_MS: u64 = 10_000;
/// Time a column covers: the first of these that fits the window in the width.
const STEPS: [u64; 14] = [
    1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 900_000,
    1_800_000, 3_600_000, 7_200_000,
];
const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// A moment to mark: an alert, or a failure (an OOM).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moment {
    pub at_ms: u64,
    pub failure: bool,
}

/// The timeline of process `pid`: `series` (name, points oldest first) drawn on one scale
/// around `moments`; `None` when no series has a reading.
pub fn render(pid: u32, series: &[(&str, &[Point])], moments: &[Moment]) -> Option<String> {
    let times = series
        .iter()
        .flat_map(|(_, pts)| pts.iter())
        .filter(|p| p.value.is_some());
    let (first, last) = times.fold((u64::MAX, 0), |(a, b), p| (a.min(p.at_ms), b.max(p.at_ms)));
    if first > last {
        return None;
    }
    let (mut from, mut to) = (first, last);
    if let (Some(lo), Some(hi)) = (
        moments.iter().map(|m| m.at_ms).min(),
        moments.iter().map(|m| m.at_ms).max(),
    ) {
        from = from.max(lo.saturating_sub(BEFORE_MS)).min(lo);
        to = to.min(hi.saturating_add(AFTER_MS)).max(hi);
    }
    let width = WIDTH - LABEL;
    let need = interval(series).max((to - from).div_ceil(width as u64 - 1));
    let step = STEPS.into_iter().find(|s| *s >= need).unwrap_or(need);
    let cols = usize::try_from((to - from) / step)
        .unwrap_or(width - 1)
        .min(width - 1)
        + 1;
    let column = |at: u64| {
        (from..=to).contains(&at).then(|| {
            usize::try_from((at - from) / step)
                .unwrap_or(0)
                .min(cols - 1)
        })
    };
    let in_window = |p: &&Point| column(p.at_ms).is_some();
    let top = series
        .iter()
        .flat_map(|(_, pts)| pts.iter().filter(in_window).filter_map(|p| p.value))
        .max()
        .unwrap_or(0);
    let mut out = format!(
        "  pid {pid} from {} to {} UTC, {} a column, bars from 0 to {}\n",
        clock(from),
        clock(to),
        units::interval(step),
        units::compact(top)
    );
    for (name, pts) in series {
        let mut row: Vec<Option<u64>> = vec![None; cols];
        // Columns a point falls in: one without any lies between two samples whose times
        // drifted across a column, and shows its neighbour; one with a gap point stays blank.
        let mut touched = vec![false; cols];
        let mut newest = None;
        for p in pts.iter().filter(in_window) {
            let Some(c) = column(p.at_ms) else { continue };
            touched[c] = true;
            if let Some(v) = p.value {
                row[c] = Some(row[c].map_or(v, |o: u64| o.max(v)));
                newest = Some(v);
            }
        }
        for c in 1..cols.saturating_sub(1) {
            if !touched[c] && touched[c + 1] && row[c + 1].is_some() {
                row[c] = row[c - 1];
            }
        }
        let bars: String = row.iter().map(|v| v.map_or(' ', |v| bar(v, top))).collect();
        let value = newest.map_or_else(|| "n/a".to_string(), units::compact);
        out.push_str(format!("  {name:<10}{value:>6} {bars}").trim_end());
        out.push('\n');
    }
    if !moments.is_empty() {
        let mut marks = vec!['.'; cols];
        for m in moments {
            if let Some(c) = column(m.at_ms) {
                // A failure outranks an alert in the same column.
                if m.failure || marks[c] != 'X' {
                    marks[c] = if m.failure { 'X' } else { '!' };
                }
            }
        }
        let marks: String = marks.into_iter().collect();
        let mut line = format!("  {:<16} {marks}", "alerts");
        let key = "   ! alert  X OOM";
        if line.chars().count() + key.len() <= WIDTH {
            line.push_str(key);
        }
        out.push_str(&line);
        out.push('\n');
    }
    Some(out)
}

/// The smallest time between two readings of the series (the sampling interval).
fn interval(series: &[(&str, &[Point])]) -> u64 {
    series
        .iter()
        .flat_map(|(_, pts)| {
            pts.windows(2)
                .map(|w| w[1].at_ms.saturating_sub(w[0].at_ms))
        })
        .filter(|d| *d > 0)
        .min()
        .unwrap_or(1000)
}

fn bar(v: u64, top: u64) -> char {
    if top == 0 {
        return BARS[0];
    }
    let level = u128::from(v) * 7 / u128::from(top);
    BARS[usize::try_from(level).unwrap_or(7).min(7)]
}

/// "06:22:38": the time of day, UTC.
fn clock(ms: u64) -> String {
    let s = super::time_ms(ms);
    s.get(11..19).unwrap_or(&s).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn points(values: &[u64]) -> Vec<Point> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| Point {
                at_ms: 1_000_000 + i as u64 * 1000,
                value: Some(*v * MIB),
            })
            .collect()
    }

    #[test]
    fn rows_share_a_scale_and_the_moments_are_marked() {
        let device = points(&[10, 20, 80, 80]);
        let alloc = points(&[5, 10, 40, 40]);
        let moments = [
            Moment {
                at_ms: 1_002_000,
                failure: false,
            },
            Moment {
                at_ms: 1_003_000,
                failure: true,
            },
        ];
        let text = render(7, &[("device", &device), ("allocated", &alloc)], &moments).unwrap();
        assert_eq!(
            text,
            "  pid 7 from 00:16:40 to 00:16:43 UTC, 1s a column, bars from 0 to 80M\n\
             \x20 device       80M ▁▂██\n\
             \x20 allocated    40M ▁▁▄▄\n\
             \x20 alerts           ..!X   ! alert  X OOM\n"
        );
        assert!(text.lines().all(|l| l.chars().count() <= WIDTH));
        assert_eq!(render(7, &[("device", &[])], &[]), None);
    }

    #[test]
    fn a_long_history_is_cut_to_the_time_around_the_moments_in_80_columns() {
        let device: Vec<u64> = (0..600).collect();
        let device = points(&device);
        let at = 1_000_000 + 500_000;
        let moments = [Moment {
            at_ms: at,
            failure: true,
        }];
        let text = render(7, &[("device", &device)], &moments).unwrap();
        assert!(text.contains("from 00:24:30 to 00:25:10"), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= WIDTH), "{text}");
    }
}
