//! The splits the screen makes every frame, worked out without ratatui's constraint solver. Each
//! gives the areas `Layout` gives for the constraints it takes (the tests compare both at every
//! size up to a few hundred cells), where `Layout` clones itself into a key, looks it up in its
//! thread's LRU cache and, on a miss, runs the solver: the solver, the cache and their
//! allocations were a tenth of the code a steady frame ran (callgrind, docs/ARCHITECTURE.md).
//! Where the constraints do not fit, `Layout` itself decides.

use ratatui::layout::{Constraint, Flex, Layout, Rect};

/// `Layout::horizontal([Constraint::Percentage(percent)]).flex(Flex::Start)`'s area in `area`:
/// its left part, `percent` of its width (rounded).
pub fn percent_of_width(area: Rect, percent: u16) -> Rect {
    Rect {
        width: part(area.width, percent),
        ..area
    }
}

/// `Layout::vertical([Constraint::Percentage(percent)]).flex(Flex::Start)`'s area in `area`: its
/// top part, `percent` of its height (rounded).
pub fn percent_of_height(area: Rect, percent: u16) -> Rect {
    Rect {
        height: part(area.height, percent),
        ..area
    }
}

fn part(length: u16, percent: u16) -> u16 {
    (f64::from(length) * f64::from(percent.min(100)) / 100.0).round() as u16
}

/// `Layout::horizontal(widths).flex(Flex::Start).spacing(spacing).split(area)`, for widths that
/// are each a `Length` but at most one `Fill`: side by side, `spacing` apart, the `Fill` taking
/// what the others and the spacing leave.
pub fn row(area: Rect, widths: &[Constraint], spacing: u16) -> Vec<Rect> {
    let fixed: Option<u32> = widths
        .iter()
        .map(|c| match c {
            Constraint::Length(w) => Some(u32::from(*w)),
            Constraint::Fill(_) => Some(0),
            _ => None,
        })
        .sum();
    let fills = widths.iter().filter(|c| c.is_fill()).count();
    let gaps = u32::from(spacing) * u32::try_from(widths.len().saturating_sub(1)).unwrap_or(0);
    match fixed.map(|f| f + gaps) {
        Some(needed) if fills <= 1 && needed <= u32::from(area.width) => {
            let rest = area.width - needed as u16;
            let mut x = area.x;
            widths
                .iter()
                .map(|c| {
                    let width = match c {
                        Constraint::Length(w) => *w,
                        _ => rest,
                    };
                    let at = Rect { x, width, ..area };
                    x = x.saturating_add(width).saturating_add(spacing);
                    at
                })
                .collect()
        }
        _ => Layout::horizontal(widths.iter().copied())
            .flex(Flex::Start)
            .spacing(spacing)
            .split(area)
            .to_vec(),
    }
}

/// `Layout::vertical([Constraint::Length(1), Constraint::Min(0)])`'s areas in `area`: its first
/// row and the rest.
pub fn first_row(area: Rect) -> [Rect; 2] {
    let first = area.height.min(1);
    [
        Rect {
            height: first,
            ..area
        },
        Rect {
            y: area.y + first,
            height: area.height - first,
            ..area
        },
    ]
}

#[cfg(test)]
mod tests;
