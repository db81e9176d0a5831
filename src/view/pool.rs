//! A probed process's memory pool: the bar (allocated | cached free, its stranded part marked |
//! the rest of its device memory: CUDA context and allocations outside the pool, NCCL's on a
//! rank whose probe saw a NCCL process group) with the figures beside it, and the table cell
//! `allocated/pool`.

use ratatui::text::{Line, Span};

use super::theme::Theme;
use crate::model::{ProcessTrack, units};
use crate::sample::Pool;

/// `4.0G/9.0G`: allocated over what the pool holds, for the table; `None` when not probed.
pub fn cell(t: &ProcessTrack) -> Option<String> {
    let p = t.sample.pool.value()?;
    let size = |v: Option<u64>| v.map_or_else(|| "?".to_string(), units::compact);
    Some(format!("{}/{}", size(p.allocated), size(p.reserved)))
}

/// The pool's parts in bytes: allocated, free but usable, stranded, rest of the device memory.
fn parts(p: &Pool, device: Option<u64>) -> [u64; 4] {
    let allocated = p.allocated.unwrap_or(0);
    let free = p.cached_free.unwrap_or(0);
    let stranded = p.stranded.unwrap_or(0).min(free);
    let pool = p.reserved.unwrap_or(allocated.saturating_add(free));
    let rest = device.map_or(0, |d| d.saturating_sub(pool));
    [allocated, free - stranded, stranded, rest]
}

/// The bar, `width` cells wide, each part at least one cell when it is not zero.
fn bar(parts: [u64; 4], width: usize, theme: &Theme) -> Vec<Span<'static>> {
    let total = parts.iter().fold(0u64, |a, &b| a.saturating_add(b));
    if total == 0 || width == 0 {
        return Vec::new();
    }
    let mut cells: Vec<usize> = parts
        .iter()
        .map(|&b| {
            let share =
                usize::try_from(u128::from(b) * width as u128 / u128::from(total)).unwrap_or(width);
            if b > 0 { share.max(1) } else { 0 }
        })
        .collect();
    // Rounding and the one-cell minimum can overshoot: take it back from the largest part.
    while cells.iter().sum::<usize>() > width {
        if let Some(max) = cells.iter_mut().max() {
            *max -= 1;
        }
    }
    let fill = width - cells.iter().sum::<usize>();
    if let Some(i) = (0..4).rev().find(|&i| parts[i] > 0) {
        cells[i] += fill;
    }
    let styles = [
        theme.segment[0],
        theme.segment[1],
        theme.alert,
        theme.segment[3],
    ];
    let glyphs = [
        theme.g.segment[0],
        theme.g.segment[1],
        theme.g.segment[2],
        theme.g.segment[3],
    ];
    (0..4)
        .filter(|&i| cells[i] > 0)
        .map(|i| Span::styled(glyphs[i].repeat(cells[i]), styles[i]))
        .collect()
}

/// The pool's lines for the detail pane; empty when the process is not probed (the detail pane
/// then ends with the reason).
pub fn lines(t: &ProcessTrack, theme: &Theme, width: u16) -> Vec<Line<'static>> {
    let Some(p) = t.sample.pool.value() else {
        return Vec::new();
    };
    let device = t.sample.device_memory.get();
    let [allocated, usable, stranded, rest] = parts(p, device);
    let size = |v: Option<u64>| v.map_or_else(|| "n/a".to_string(), units::compact);
    let label = format!("{} pool ", p.framework.label());
    let room = usize::from(width).saturating_sub(label.len() + 2).min(40);
    let mut first = vec![Span::raw(label), Span::raw("[")];
    first.extend(bar([allocated, usable, stranded, rest], room, theme));
    first.push(Span::raw("]"));
    let mut out = vec![Line::from(first)];
    out.push(Line::raw(format!(
        "alloc {}  free {}  stranded {}",
        size(p.allocated),
        size(p.cached_free),
        size(p.stranded)
    )));
    let rest_text = device.map_or_else(
        || "n/a (device memory unknown)".to_string(),
        |_| units::compact(rest),
    );
    // NCCL's communicators hold memory the pool never sees: where the probe saw a NCCL process
    // group, the line says so with the reference figures, measured elsewhere and labelled so (an
    // unprobed rank says nothing: its backend is not known).
    let nccl = t
        .sample
        .rank
        .as_ref()
        .and_then(crate::sample::Rank::nccl)
        .unwrap_or(false);
    let part = if nccl { ", part of it NCCL's" } else { "" };
    out.push(Line::raw(format!(
        "pool {}  outside it {rest_text}{part}  limit {}",
        size(p.reserved),
        size(p.limit)
    )));
    if nccl {
        out.push(Line::raw(crate::model::nccl::reference_text()));
    }
    let retries = p
        .alloc_retries
        .map_or_else(|| "n/a".into(), |r| r.to_string());
    out.push(Line::raw(format!(
        "largest free block {}  retries {retries}",
        size(p.largest_free_block)
    )));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Config;

    #[test]
    fn absurd_figures_from_a_bad_file_draw_without_overflowing() {
        let theme = Theme::new(&Config::new(1000, 60_000));
        let p = Pool {
            framework: crate::sample::Framework::Pytorch,
            version: None,
            at_ms: 0,
            allocated: Some(u64::MAX),
            reserved: None,
            cached_free: Some(u64::MAX),
            stranded: None,
            largest_free_block: None,
            largest_alloc: None,
            limit: None,
            peak_allocated: None,
            peak_reserved: None,
            alloc_retries: None,
            ooms: None,
        };
        let parts = parts(&p, Some(u64::MAX));
        assert_eq!(parts[0], u64::MAX);
        let cells: usize = bar(parts, 40, &theme)
            .iter()
            .map(|s| s.content.chars().count())
            .sum();
        assert_eq!(cells, 40);
    }

    #[test]
    fn the_bar_fills_its_width_and_shows_every_part_that_is_not_zero() {
        let theme = Theme::new(&Config::new(1000, 60_000));
        for width in [1usize, 4, 10, 37, 40] {
            for parts in [
                [1, 0, 0, 0],
                [4 << 30, 5 << 30, 1, 512 << 20],
                [0, 0, 0, 0],
                [1, 1, 1, 1],
            ] {
                let spans = bar(parts, width, &theme);
                let cells: usize = spans.iter().map(|s| s.content.chars().count()).sum();
                let expected = if parts.iter().sum::<u64>() == 0 {
                    0
                } else {
                    width
                };
                assert_eq!(cells, expected, "{parts:?} in {width}");
                if width >= 4 {
                    assert_eq!(spans.len(), parts.iter().filter(|p| **p > 0).count());
                }
            }
        }
    }
}
