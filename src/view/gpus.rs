//! The GPU lines: a four-segment memory bar with its numbers, then utilisation, temperature,
//! power, a sparkline of used memory and the GPU's notes (alerts, lost, n/a reasons).

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::spark::{self, Window};

use super::text::fit;
use super::theme::Theme;
use crate::model::{GpuTrack, Level, Segments, units};
use crate::sample::{GpuStatus, Reading};
use crate::screen::mig::MigRow;
use crate::screen::{Scale, State};

/// Labels of the four segments, in bar order.
const LABELS: [&str; 4] = ["procs", "other", "rsvd", "free"];

/// The GPU lines of a block `width` columns wide, and where each GPU's lines start.
pub struct GpuLines {
    pub lines: Vec<Line<'static>>,
    /// The lines of each GPU (indices into `lines`), in index order.
    pub gpus: Vec<std::ops::Range<usize>>,
}

/// The GPU lines for a block `width` columns wide; `two` adds each GPU's readings line. The bar
/// keeps at least half the width: when its numbers do not fit beside it they get a line of
/// their own.
pub fn lines(state: &State, theme: &Theme, width: u16, two: bool) -> GpuLines {
    let gpus = state.machine().gpus_in_order();
    let numbers: Vec<Option<[String; 4]>> = gpus.iter().map(|g| numbers(g)).collect();
    let mut widths = [0usize; 4];
    for n in numbers.iter().flatten() {
        for (w, s) in widths.iter_mut().zip(n) {
            *w = (*w).max(s.len());
        }
    }
    let name_width = gpus.iter().map(|g| name(g).len()).max().unwrap_or(0);
    let mut out = Vec::new();
    let mut ranges = Vec::new();
    for (g, nums) in gpus.iter().zip(&numbers) {
        let start = out.len();
        let focused = state.screen.focus.as_deref() == Some(g.sample.uuid.as_str());
        let label = format!(
            "{}GPU{} {:<name_width$} ",
            if focused { "> " } else { "  " },
            g.sample.index,
            name(g)
        );
        let indent = label.chars().count();
        let label_style = if focused { theme.title } else { Style::new() };
        let mut first = vec![Span::styled(label, label_style)];
        let width = usize::from(width);
        match (&g.segments, nums) {
            (Some(seg), Some(nums)) => {
                let text: Vec<String> = LABELS
                    .iter()
                    .zip(nums)
                    .zip(widths)
                    .map(|((l, n), w)| format!("{l} {n:>w$}"))
                    .collect();
                let tail: usize =
                    text.iter().map(String::len).sum::<usize>() + 2 * (text.len() - 1);
                let beside = width.saturating_sub(indent + 4 + tail);
                let own_line = beside * 2 < width;
                let bar = if own_line {
                    width.saturating_sub(indent + 3)
                } else {
                    beside
                };
                first.push(Span::raw("["));
                first.extend(bar_spans(seg, bar, theme));
                first.push(Span::raw("] "));
                if own_line {
                    out.push(Line::from(std::mem::take(&mut first)));
                    first.push(Span::raw(" ".repeat(indent)));
                }
                for (i, t) in text.into_iter().enumerate() {
                    if i > 0 {
                        first.push(Span::raw("  "));
                    }
                    let style = if nums[i] == "n/a" {
                        theme.na
                    } else {
                        Style::new()
                    };
                    first.push(Span::styled(t, style));
                }
            }
            _ => {
                let (text, style) = match (g.lost_since_ms, &g.sample.status) {
                    (Some(since), GpuStatus::Lost { reason }) => (
                        format!("lost since {}: {reason}", units::clock(since)),
                        theme.alert,
                    ),
                    _ => {
                        let reason = g.sample.memory.reason().unwrap_or("not read yet");
                        (format!("memory n/a: {reason}"), theme.na)
                    }
                };
                first.push(Span::styled(
                    fit(&text, width.saturating_sub(indent + 1), theme.g.ellipsis),
                    style,
                ));
            }
        }
        out.push(Line::from(first));
        if two {
            out.push(second_line(state, g, theme, indent, width));
        }
        let migs = state
            .screen
            .mig
            .iter()
            .filter(|m| m.gpu_uuid == g.sample.uuid);
        out.extend(migs.map(|m| mig_line(m, theme, width)));
        ranges.push(start..out.len());
    }
    out.extend(reserved_notes(&gpus, theme, usize::from(width)));
    GpuLines {
        lines: out,
        gpus: ranges,
    }
}

/// A MIG instance under its GPU: ids, profile, a used/free bar, its memory and processes.
fn mig_line(m: &MigRow, theme: &Theme, width: usize) -> Line<'static> {
    let i = &m.instance;
    let plural = if m.processes == 1 { "" } else { "es" };
    let ids = format!("{}/{}", i.gpu_instance_id, i.compute_instance_id);
    let label = format!("    MIG {ids:<5} {:<8} ", i.profile);
    let mut spans = vec![Span::raw(label.clone())];
    match i.memory.value() {
        Some(mem) => {
            let tail = format!(
                " used {} of {}  {} process{plural}",
                units::compact(mem.used),
                units::compact(mem.total),
                m.processes
            );
            let bar = width.saturating_sub(label.len() + tail.len() + 3);
            let seg = Segments {
                total: mem.total,
                processes: mem.used.min(mem.total),
                other: 0,
                reserved: Some(0),
                free: mem.total.saturating_sub(mem.used),
            };
            spans.push(Span::raw("["));
            spans.extend(bar_spans(&seg, bar, theme));
            spans.push(Span::raw("]"));
            spans.push(Span::raw(tail));
        }
        None => spans.push(Span::styled(
            format!("memory n/a: {}", i.memory.reason().unwrap_or_default()),
            theme.na,
        )),
    }
    Line::from(spans)
}

/// Why reserved memory is n/a, once per distinct reason (with NVML v1 all GPUs share one).
fn reserved_notes(gpus: &[&GpuTrack], theme: &Theme, width: usize) -> Vec<Line<'static>> {
    let mut reasons: Vec<&str> = Vec::new();
    for g in gpus {
        if let Some(r) = g.sample.memory.value().and_then(|m| m.reserved.reason())
            && !reasons.contains(&r)
        {
            reasons.push(r);
        }
    }
    reasons
        .into_iter()
        .map(|r| {
            let text = fit(
                &format!("  rsvd n/a: {r}"),
                width.saturating_sub(1),
                theme.g.ellipsis,
            );
            Line::styled(text, theme.na)
        })
        .collect()
}

/// "H200" from "NVIDIA H200".
fn name(g: &GpuTrack) -> &str {
    g.sample
        .name
        .strip_prefix("NVIDIA ")
        .unwrap_or(&g.sample.name)
}

/// The four numbers beside the bar, binary-rounded like every size on screen.
fn numbers(g: &GpuTrack) -> Option<[String; 4]> {
    let seg = g.segments?;
    let f = units::compact;
    Some([
        f(seg.processes),
        f(seg.other),
        seg.reserved.map_or_else(|| "n/a".to_string(), f),
        f(seg.free),
    ])
}

/// The bar's segments, each with its own glyph and style.
pub(super) fn bar_spans(seg: &Segments, width: usize, theme: &Theme) -> Vec<Span<'static>> {
    bar_widths(seg, width)
        .iter()
        .enumerate()
        .filter(|(_, w)| **w > 0)
        .map(|(i, w)| Span::styled(theme.g.segment[i].repeat(*w), theme.segment[i]))
        .collect()
}

/// Columns of each segment: proportional to bytes (largest remainder), adding up to `width`;
/// a segment that holds any bytes gets at least one column when there is room.
pub fn bar_widths(seg: &Segments, width: usize) -> [usize; 4] {
    let bytes = [
        seg.processes,
        seg.other,
        seg.reserved.unwrap_or(0),
        seg.free,
    ];
    let total: u128 = bytes.iter().map(|b| u128::from(*b)).sum();
    if total == 0 || width == 0 {
        return [0, 0, 0, width];
    }
    let w = width as u128;
    let mut cols = [0usize; 4];
    let mut rest = [0u128; 4];
    for i in 0..4 {
        let exact = u128::from(bytes[i]) * w;
        cols[i] = usize::try_from(exact / total).unwrap_or(width);
        rest[i] = exact % total;
    }
    let mut order = [0, 1, 2, 3];
    order.sort_unstable_by(|a, b| rest[*b].cmp(&rest[*a]).then(a.cmp(b)));
    let short = width - cols.iter().sum::<usize>();
    for i in order.iter().take(short) {
        cols[*i] += 1;
    }
    for i in 0..4 {
        if bytes[i] > 0 && cols[i] == 0 {
            let widest = (0..4).max_by_key(|j| (cols[*j], *j)).unwrap_or(3);
            if cols[widest] > 1 {
                cols[widest] -= 1;
                cols[i] = 1;
            }
        }
    }
    cols
}

/// Utilisation, temperature, power, the used-memory sparkline and the GPU's notes.
fn second_line(
    state: &State,
    g: &GpuTrack,
    theme: &Theme,
    indent: usize,
    width: usize,
) -> Line<'static> {
    let s = &g.sample;
    let na = |label: &str, r: &Reading<u32>, f: &dyn Fn(u32) -> String| match r.get() {
        Some(v) => Span::raw(f(v)),
        None => Span::styled(format!("{label} n/a"), theme.na),
    };
    let readings = [
        na("util", &s.utilization, &|v| format!("util {v}%")),
        na("temp", &s.temperature_c, &|v| {
            format!("{v}{}", theme.g.degrees)
        }),
        na("power", &s.power_mw, &|v| format!("{}W", v / 1000)),
    ];
    let mut notes: Vec<Span<'static>> = Vec::new();
    if g.alerts > 0 {
        let plural = if g.alerts == 1 { "" } else { "s" };
        notes.push(Span::styled(
            format!("{} {} alert{plural}", theme.g.warn, g.alerts),
            theme.alert,
        ));
    }
    // Info-level findings threaten nothing: counted apart, without the warning sign.
    if g.infos > 0 {
        notes.push(Span::raw(format!("{} info", g.infos)));
    }
    // Its memory health, only when there is something to say.
    for t in &g.troubles {
        notes.push(Span::styled(t.short(), theme.alert));
    }
    if let Some((code, _)) = g.xids.last {
        let code = code.map_or_else(|| "?".to_string(), |c| c.to_string());
        notes.push(Span::styled(format!("Xid {code}"), theme.alert));
    }
    if g.unattributed > 0 {
        let plural = if g.unattributed == 1 { "" } else { "s" };
        notes.push(Span::styled(
            format!("{} proc{plural} n/a", g.unattributed),
            theme.na,
        ));
    }
    let window_label = format!(" ({})", units::duration_label(spark::shown_span(state)));
    let fixed: usize = readings.iter().map(Span::width).sum::<usize>()
        + 2 * readings.len()
        + "mem ".len()
        + window_label.len()
        + notes.iter().map(|n| n.width() + 2).sum::<usize>();
    // One column stays free before the border.
    let room = width.saturating_sub(indent + fixed + 1);
    let marks: Vec<u64> = state
        .machine()
        .alerts
        .iter()
        .filter(|a| a.level == Level::Failure && a.gpu_uuid.as_deref() == Some(s.uuid.as_str()))
        .map(|a| a.at_ms)
        .collect();

    let mut spans = vec![Span::raw(" ".repeat(indent))];
    for (i, r) in readings.into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::raw("  "));
        }
        spans.push(r);
    }
    if room >= 4 {
        spans.push(Span::raw("  mem "));
        let window = Window::of(state, room);
        // Fitted to its readings or the whole GPU, as the chart (`g`).
        let top = match state.screen.scale {
            Scale::Fit => None,
            Scale::Gpu => g.total,
        };
        spans.extend(spark::spans(&g.used, window, top, &marks, theme));
        spans.push(Span::raw(window_label));
    }
    // Notes that do not fit whole are left out, and an ellipsis says so (the alerts pane has
    // them all).
    let mut used: usize = spans.iter().map(Span::width).sum();
    let last = width.saturating_sub(1);
    let count = notes.len();
    for (i, n) in notes.into_iter().enumerate() {
        let more = if i + 1 < count { 3 } else { 0 };
        if used + 2 + n.width() + more > last {
            if used + 3 <= last {
                spans.push(Span::raw(format!(" {}", theme.g.ellipsis)));
            }
            break;
        }
        used += 2 + n.width();
        spans.push(Span::raw("  "));
        spans.push(n);
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(processes: u64, other: u64, reserved: Option<u64>, free: u64) -> Segments {
        Segments {
            total: processes + other + reserved.unwrap_or(0) + free,
            processes,
            other,
            reserved,
            free,
        }
    }

    #[test]
    fn widths_add_up_and_follow_the_bytes() {
        assert_eq!(bar_widths(&seg(50, 25, Some(0), 25), 20), [10, 5, 0, 5]);
        assert_eq!(bar_widths(&seg(1, 1, Some(1), 0), 10), [4, 3, 3, 0]);
        assert_eq!(bar_widths(&seg(0, 0, None, 0), 7), [0, 0, 0, 7]);
    }

    #[test]
    fn a_small_segment_still_shows() {
        let w = bar_widths(&seg(96_000, 1_200, Some(600), 42_000), 20);
        assert_eq!(w.iter().sum::<usize>(), 20);
        assert!(w.iter().all(|c| *c >= 1));
    }
}
