//! The block map pane (`m`): the selected process's pool on its GPU as its allocator holds it.
//! The sentence that says whether a request fits; the segments end to end and to scale, each cell
//! allocated, with holes, free or pending (private pools and expandable segments marked); the
//! holes by size; the top sites (`file:line function`, shown escaped) with their blocks, bytes and
//! change since the previous map; and whether allocation history is recorded.
//!
//! The cells depend on the pane's width, so they are laid out here; everything else was derived
//! in the model's update.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Padding, Paragraph};

use super::Stamping;
use super::draw::draw_wrapped;
use super::panel::Panel;
use super::text::{fit, wrap};
use super::theme::Theme;
use crate::model::maps::{DeviceView, MapTrack, SiteChange};
use crate::model::{ProcessTrack, units};
use crate::oom::sizes::human;
use crate::sample::pool_map::{BlockState, MapDevice};
use crate::screen::State;

/// Rows of segment cells at most.
const MAX_CELL_ROWS: usize = 16;

/// What a cell of the strip shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    Allocated,
    /// Mostly allocated, with a hole.
    Holes,
    Free,
    Pending,
}

/// One cell and how its segment is marked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marked {
    pub cell: Cell,
    pub private: bool,
    pub expandable: bool,
}

pub fn render(
    frame: &mut Frame,
    area: Rect,
    block: Panel<'static>,
    state: &State,
    theme: &Theme,
    stamps: &mut Stamping,
) {
    let block = block.padding(Padding::horizontal(1));
    let Some(t) = state.selected_process() else {
        let block = block.title(Line::styled(" block map ", theme.title));
        let text = Line::styled("no process selected (m closes the map)", theme.na);
        let inner = block.inner(area);
        stamps.panel(block, area);
        frame.render_widget(Paragraph::new(text), inner);
        return;
    };
    let track = state.machine().map_of(t.key.pid, t.key.start_time);
    let view = track.and_then(|m| m.view_for(&t.key.gpu_uuid));
    let title = title(t, track, view, state);
    let title = fit(
        &title,
        usize::from(area.width.saturating_sub(4)),
        theme.g.ellipsis,
    );
    let block = block.title(Line::styled(format!(" {title} "), theme.title));
    let inner = block.inner(area);
    let lines = match (track, view) {
        (Some(track), Some(view)) => lines(track, view, state, theme, inner),
        _ => absent(t, track, state, theme, inner.width),
    };
    stamps.panel(block, area);
    draw_wrapped(frame, inner, lines);
}

fn title(
    t: &ProcessTrack,
    track: Option<&MapTrack>,
    view: Option<&DeviceView>,
    state: &State,
) -> String {
    let gpu = state
        .machine()
        .gpu(&t.key.gpu_uuid)
        .map_or_else(|| "GPU ?".into(), |g| format!("GPU{}", g.sample.index));
    let mut title = format!("block map: pid {} on {gpu}", t.key.pid);
    if let (Some(map), Some(v)) = (track.and_then(|m| m.map.as_ref()), view) {
        title.push_str(&format!(
            ", {} {}, {} UTC, took {:.1} ms",
            v.framework.label(),
            map.reason.word(),
            units::clock(map.at_ms),
            map.took_us as f64 / 1000.0
        ));
    }
    title
}

/// Why there is no map to show, and what would give one: on this screen (a replay cannot ask a
/// recorded probe for anything, nor can a screen whose requests are off).
fn absent(
    t: &ProcessTrack,
    track: Option<&MapTrack>,
    state: &State,
    theme: &Theme,
    width: u16,
) -> Vec<Line<'static>> {
    let off = state.screen.requests_off.as_deref();
    let text = match (t.sample.pool.reason(), track.and_then(|m| m.map.as_ref())) {
        (Some(why), _) => format!("no map: {why}"),
        (None, Some(_)) => "no map for this GPU: the probe's map has no pool on it".into(),
        (None, None) if state.config.replay_speed.is_some() => "no map in this recording: a replay shows only the maps its recording holds (taken at an OOM, during a leak or fragmentation alert, or when asked); M, R and e ask a live probe, which a replay has not".into(),
        (None, None) => match off {
            Some(why) => format!("no map yet: requests to probes are off here ({why}); a probe still takes one at an OOM"),
            None => "no map yet: M asks its probe for one (a map is taken only when asked, at an OOM, or during a leak or fragmentation alert)".into(),
        },
    };
    let mut out: Vec<Line<'static>> = wrap(&text, usize::from(width))
        .into_iter()
        .map(|l| Line::styled(l, theme.na))
        .collect();
    out.extend(track.map(|m| recording_line(m, off.is_none(), theme)));
    out
}

fn lines(
    track: &MapTrack,
    view: &DeviceView,
    state: &State,
    theme: &Theme,
    inner: Rect,
) -> Vec<Line<'static>> {
    let width = usize::from(inner.width);
    let head = vec![Line::styled(view.fit.clone(), theme.title)];
    let device = track.device(view);
    let mut facts: Vec<Line<'static>> = Vec::new();
    if let Some(d) = device {
        facts.push(legend(d, theme));
    }
    if !view.holes.is_empty() {
        let holes: Vec<String> = view
            .holes
            .iter()
            .map(|h| match h.count {
                0 => format!("{} 0", h.label),
                n => format!("{} {n} ({})", h.label, units::compact(h.bytes)),
            })
            .collect();
        facts.push(Line::raw(format!("holes {}", holes.join(theme.g.dot))));
    }
    if let Some(d) = device {
        let size = |v: Option<u64>| v.map_or_else(|| "n/a".into(), units::compact);
        facts.push(Line::raw(format!(
            "largest free block {}{dot}free {}{dot}allocated {}{dot}reserved {}",
            size(d.largest_free),
            size(d.free),
            size(d.allocated),
            size(d.reserved),
            dot = theme.g.dot
        )));
        if let Some(n) = d.free_blocks {
            facts.push(Line::raw(format!("free blocks in the pool {n}")));
        }
    }
    let asks = state.screen.requests_off.is_none();
    facts.push(recording_line(track, asks, theme));
    let sites = site_lines(track, view, theme, width);
    // The strip gets what the text leaves, the first sites kept in view.
    let text_rows =
        super::text::rows(&head, width) + super::text::rows(&facts, width) + sites.len().min(4);
    let strip_rows = usize::from(inner.height)
        .saturating_sub(text_rows)
        .clamp(1, MAX_CELL_ROWS);
    let mut out = head;
    if let Some(d) = device {
        out.extend(strip(d, width, strip_rows, theme));
    }
    out.extend(facts);
    out.extend(sites);
    out
}

/// The sites (with a header), what has no site, and JAX's shapes.
fn site_lines(
    track: &MapTrack,
    view: &DeviceView,
    theme: &Theme,
    width: usize,
) -> Vec<Line<'static>> {
    let device = track.device(view);
    let mut out = Vec::new();
    if view.sites.is_empty() {
        let why = view
            .sites_reason
            .as_deref()
            .unwrap_or("the probe gave none");
        out.push(Line::styled(format!("sites n/a: {why}"), theme.na));
    } else {
        out.push(Line::styled(
            format!("{:>7} {:>7} {:>7}  held by", "bytes", "blocks", "change"),
            theme.title,
        ));
        for s in &view.sites {
            let change = match s.change {
                SiteChange::Unknown => String::new(),
                SiteChange::New => "new".into(),
                SiteChange::By(0) => "=".into(),
                SiteChange::By(b) => units::change(b),
            };
            let row = format!(
                "{:>7} {:>7} {:>7}  {}",
                units::compact(s.bytes),
                s.blocks,
                change,
                s.label
            );
            out.push(Line::raw(fit(&row, width, theme.g.ellipsis)));
        }
    }
    if let Some(u) = device.and_then(|d| d.unattributed).filter(|u| u.blocks > 0) {
        out.push(Line::styled(
            format!(
                "{} in {} blocks allocated before recording started: no site",
                human(u.bytes),
                u.blocks
            ),
            theme.na,
        ));
    }
    for s in device.and_then(|d| d.shapes.as_ref()).into_iter().flatten() {
        let row = format!(
            "{:>7} {:>7}  {} {}",
            units::compact(s.bytes),
            s.count,
            s.dtype,
            s.shape
        );
        out.push(Line::raw(fit(&row, width, theme.g.ellipsis)));
    }
    out
}

/// Whether the job records its allocation history, and the key that changes it where `asks`
/// (requests to probes are on).
fn recording_line(track: &MapTrack, asks: bool, theme: &Theme) -> Line<'static> {
    match &track.recording {
        Some(r) if r.on => Line::raw(format!(
            "recording allocation history{} ({} entries at most, {} stacks{})",
            r.since_ms
                .map_or_else(String::new, |s| format!(" since {} UTC", units::clock(s))),
            r.max_entries,
            r.stacks,
            if asks { "; R stops" } else { "" }
        )),
        Some(r) => Line::styled(
            format!(
                "not recording allocation history{}: {}",
                r.reason
                    .as_deref()
                    .map_or_else(String::new, |w| format!(" ({w})")),
                if asks {
                    "R starts it (sites need it)"
                } else {
                    "the map names no sites"
                }
            ),
            theme.na,
        ),
        None => Line::styled(
            "recording n/a: no framework that records is loaded",
            theme.na,
        ),
    }
}

/// The segments end to end in `rows` rows of `width` cells, to scale.
fn strip(d: &MapDevice, width: usize, rows: usize, theme: &Theme) -> Vec<Line<'static>> {
    let Some(segments) = d.segments.as_ref().filter(|s| !s.is_empty()) else {
        let why = d
            .segments_reason
            .as_deref()
            .unwrap_or("the framework gives no block map");
        return vec![Line::styled(format!("segments n/a: {why}"), theme.na)];
    };
    let cells = cells(segments, width * rows);
    let glyph = |c: Cell| match c {
        Cell::Allocated => theme.g.segment[0],
        Cell::Holes => theme.g.segment[1],
        Cell::Pending => theme.g.segment[2],
        Cell::Free => theme.g.segment[3],
    };
    let style = |m: &Marked| {
        let base = match m.cell {
            Cell::Allocated | Cell::Holes => theme.segment[0],
            Cell::Pending => theme.segment[2],
            Cell::Free => theme.segment[3],
        };
        let mut s: Style = base;
        if m.private {
            s = s.add_modifier(Modifier::UNDERLINED);
        }
        if m.expandable {
            s = s.add_modifier(Modifier::ITALIC);
        }
        s
    };
    cells
        .chunks(width.max(1))
        .map(|row| {
            Line::from(
                row.iter()
                    .map(|m| Span::styled(glyph(m.cell), style(m)))
                    .collect::<Vec<_>>(),
            )
        })
        .collect()
}

fn legend(d: &MapDevice, theme: &Theme) -> Line<'static> {
    let segments = d.segments.as_deref().unwrap_or_default();
    let private = segments.iter().filter(|s| s.private).count();
    let expandable = segments.iter().filter(|s| s.expandable).count();
    let g = theme.g.segment;
    // Absent is not zero: a pool with no block map (JAX, CuPy) has no segment count.
    let total = d
        .segments_total
        .map_or_else(|| "n/a".to_string(), |n| n.to_string());
    let mut text = format!(
        "{} alloc {} holes {} free {} pending{}{total} segments",
        g[0], g[1], g[3], g[2], theme.g.dot
    );
    if let Some(e) = d.elided.filter(|e| e.segments > 0) {
        text.push_str(&format!(
            " ({} not drawn: {})",
            e.segments,
            units::compact(e.bytes)
        ));
    }
    if private > 0 {
        text.push_str(&format!(
            "{}{private} private pool (underlined)",
            theme.g.dot
        ));
    }
    if expandable > 0 {
        text.push_str(&format!("{}{expandable} expandable (italic)", theme.g.dot));
    }
    Line::styled(text, theme.na)
}

/// `n` cells over the segments' bytes end to end: each cell the state that holds most of its
/// bytes, except that a cell of allocated bytes with any hole in it shows the hole.
pub fn cells(segments: &[crate::sample::pool_map::Segment], n: usize) -> Vec<Marked> {
    let total: u128 = segments.iter().map(|s| u128::from(s.size)).sum();
    if total == 0 || n == 0 {
        return Vec::new();
    }
    let n128 = n as u128;
    // Bytes of each state per cell: allocated, free, pending; and the marks.
    let mut acc = vec![([0u128; 3], false, false); n];
    let mut at: u128 = 0;
    for seg in segments {
        let start = at;
        let end = start + u128::from(seg.size);
        for run in &seg.runs {
            let k = match run.0 {
                BlockState::Allocated => 0,
                BlockState::Free => 1,
                BlockState::Pending => 2,
            };
            let (mut from, to) = (at, (at + u128::from(run.2)).min(end));
            while from < to {
                let cell = usize::try_from(from * n128 / total)
                    .unwrap_or(n - 1)
                    .min(n - 1);
                let cell_end = (cell as u128 + 1) * total / n128;
                let upto = to.min(cell_end.max(from + 1));
                acc[cell].0[k] += upto - from;
                acc[cell].1 |= seg.private;
                acc[cell].2 |= seg.expandable;
                from = upto;
            }
            at = to;
        }
        // A segment whose runs do not add up to its size still takes exactly its place.
        at = end;
    }
    acc.into_iter()
        .map(|([a, f, p], private, expandable)| {
            let cell = if a + f + p == 0 {
                Cell::Free
            } else if p > a && p >= f {
                Cell::Pending
            } else if f > a {
                Cell::Free
            } else if f + p > 0 {
                Cell::Holes
            } else {
                Cell::Allocated
            };
            Marked {
                cell,
                private,
                expandable,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
