//! The selected process in detail: its device-memory sparkline, exact figures, its place in a
//! distributed job and the job's ranks side by side (`rank.rs`), start, framework, the log gpumon
//! follows for it, memory settings, why any field is n/a, and what its VMS means.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Padding;

use super::panel::Panel;
use super::spark::{self, Window};

use super::Stamping;
use super::draw::Wrapped;
use super::text::{self, fit};
use super::theme::Theme;
use crate::model::{Level, ProcessTrack, units};
use crate::sample::Reading;
use crate::screen::State;

/// Why VMS is so much larger than device memory for CUDA processes.
const VMS_CAPTION: &str =
    "VMS counts address space the CUDA driver reserved (UVA), not memory in use.";

/// Draws the pane; `built` is its text if the layout built it already, with the width it was
/// built for.
pub fn render(
    frame: &mut Frame,
    area: Rect,
    block: Panel<'static>,
    state: &State,
    theme: &Theme,
    built: Option<(u16, Vec<Line<'static>>)>,
    stamps: &mut Stamping,
) {
    let block = block.padding(Padding::horizontal(1));
    let Some(t) = state.selected_process() else {
        let block = block.title(Line::styled(" selected ", theme.title));
        let inner = block.inner(area);
        stamps.panel(block, area);
        stamps.draw_lines(frame, inner, Line::styled("no process selected", theme.na));
        return;
    };
    let s = &t.sample;
    let command = s.command.value().map_or("", String::as_str);
    let title = fit(
        format!(" selected: {} {command}", s.pid).trim_end(),
        usize::from(area.width.saturating_sub(4)),
        theme.g.ellipsis,
    );
    let mut block = block.title(Line::styled(format!("{title} "), theme.title));
    let inner = block.inner(area);
    let text = match built {
        Some((width, text)) if width == inner.width => text,
        _ => lines(t, state, theme, inner.width),
    };
    // Rows the pane cuts off, counted on its bottom border as the table and alerts count theirs.
    let text = Wrapped::new(text, inner.width);
    let cut = text.rows().saturating_sub(usize::from(inner.height));
    if cut > 0 {
        let lines = if cut == 1 { "line" } else { "lines" };
        block = block.title_bottom(
            Line::styled(format!(" +{cut} more {lines} "), theme.title).right_aligned(),
        );
    }
    stamps.panel(block, area);
    text.draw_kept(frame, inner, |at, content: &dyn Fn() -> u64| {
        stamps.kept(at, content())
    });
}

/// The pane's text at `width` columns (its border and padding excluded); `None` with no process
/// selected.
pub fn text(state: &State, theme: &Theme, width: u16) -> Option<Vec<Line<'static>>> {
    state
        .selected_process()
        .map(|t| lines(t, state, theme, width))
}

/// Rows the pane's `text` takes at `width` columns (one, "no process selected", without).
pub fn wanted(text: Option<&[Line<'static>]>, width: u16) -> usize {
    text.map_or(1, |lines| text::rows(lines, usize::from(width)))
}

fn lines(t: &ProcessTrack, state: &State, theme: &Theme, width: u16) -> Vec<Line<'static>> {
    let s = &t.sample;
    let na = |text: &str| Span::styled(text.to_string(), theme.na);
    let or_na = |v: Option<String>| v.map_or_else(|| na("n/a"), Span::raw);
    let window_label = format!(" ({})", units::duration_label(spark::shown_span(state)));
    let room = usize::from(width).saturating_sub("device ".len() + window_label.len());
    let marks: Vec<u64> = state
        .machine()
        .alerts
        .iter()
        .filter(|a| {
            a.level == Level::Failure
                && a.pid == Some(s.pid)
                && a.gpu_uuid.as_ref().is_none_or(|g| *g == s.gpu_uuid)
        })
        .map(|a| a.at_ms)
        .collect();

    let mut spark_line = vec![Span::raw("device ")];
    spark_line.extend(spark::spans(
        &t.history,
        Window::of(state, room),
        None,
        &marks,
        theme,
    ));
    spark_line.push(Span::raw(window_label));

    // Every size as elsewhere on screen, with the exact MiB beside it.
    let size = |b: Option<u64>| b.map(|b| format!("{} ({})", units::compact(b), units::mib(b)));
    let settings = match s.settings.value() {
        None => na("unknown"),
        Some(m) if m.is_empty() => Span::raw("none set"),
        Some(_) => Span::raw("from its environment:"),
    };
    let mut out = vec![Line::from(spark_line)];
    let figure = |label: &str, b: Option<u64>| vec![Span::raw(format!("{label} ")), or_na(size(b))];
    // Once the address space is gone, the last reading, said to be one (never a 0).
    let host_figure = |label: &str, b: Option<(u64, bool)>| match b {
        Some((b, true)) => vec![Span::raw(format!(
            "{label} {} ({}, last read)",
            units::compact(b),
            units::mib(b)
        ))],
        b => figure(label, b.map(|(b, _)| b)),
    };
    let pairs = [
        (figure("now", s.device_memory.get()), figure("peak", t.peak)),
        (host_figure("VMS", t.vms()), host_figure("RSS", t.rss())),
    ];
    // Two figures a line where they fit, else one.
    for (mut a, b) in pairs {
        let len = |v: &[Span]| v.iter().map(Span::width).sum::<usize>();
        if len(&a) + 2 + len(&b) <= usize::from(width) {
            a.push(Span::raw("  "));
            a.extend(b);
            out.push(Line::from(a));
        } else {
            out.extend([Line::from(a), Line::from(b)]);
        }
    }
    if let (Some(gi), ci) = (s.gpu_instance_id, s.compute_instance_id) {
        let ci = ci.map_or_else(|| "n/a".to_string(), |c| c.to_string());
        out.push(Line::raw(format!("MIG instance GI {gi} CI {ci}")));
    }
    if let Some(u) = s.util.value() {
        out.push(Line::raw(format!(
            "util SM {}%  MEM {}%  ENC {}%  DEC {}%",
            u.sm, u.memory, u.encoder, u.decoder
        )));
    }
    out.extend(super::rank::who(t, state, theme));
    out.extend(super::pool::lines(t, theme, width));
    out.extend(super::life::detail_lines(t, state, theme));
    out.extend(super::rank::side_by_side(t, state, theme, width));
    // Why fields are n/a comes before the facts that are often n/a for the same reason.
    for (fields, reason) in reasons(t) {
        out.push(Line::styled(
            format!("{} n/a: {reason}", fields.join(", ")),
            theme.na,
        ));
    }
    out.extend(super::rank::unknown(t, theme));
    out.extend([
        Line::from(vec![
            Span::raw("started "),
            or_na(
                s.start_time
                    .get()
                    .map(|secs| units::date_time(secs.saturating_mul(1000)) + " UTC"),
            ),
        ]),
        Line::from(vec![
            Span::raw("framework "),
            or_na(s.framework.value().map(|f| f.label().to_string())),
        ]),
    ]);
    if let Some(c) = s.container.value().filter(|c| !c.full.is_empty()) {
        let inside = c
            .namespace_pid
            .map_or_else(String::new, |p| format!(" (pid {p} inside)"));
        out.push(Line::raw(format!("in {}{inside}", c.full)));
    }
    out.extend(log_lines(&s.log, theme, usize::from(width)));
    out.push(Line::from(vec![Span::raw("settings "), settings]));
    // One setting a line; a long one breaks after its '=' rather than inside a word.
    for (k, v) in s.settings.value().into_iter().flatten() {
        if k.len() + 3 + v.len() <= usize::from(width) {
            out.push(Line::raw(format!("  {k}={v}")));
        } else {
            out.push(Line::raw(format!("  {k}=")));
            out.push(Line::raw(format!("    {v}")));
        }
    }
    if t.vms_ratio().is_some_and(|r| r > 1.0) {
        out.push(Line::styled(VMS_CAPTION, Style::new()));
    }
    if let Some(reason) = s.pool.reason() {
        out.push(Line::styled(format!("pool n/a: {reason}"), theme.na));
    }
    out
}

/// "log: PATH (followed)", or why no log is followed; a path too long for the line gets one of
/// its own, cut at the front so its file name shows.
fn log_lines(log: &Reading<Vec<String>>, theme: &Theme, width: usize) -> Vec<Line<'static>> {
    let Some(files) = log.value() else {
        let reason = log.reason().unwrap_or("n/a");
        return vec![Line::styled(format!("log: {reason}"), theme.na)];
    };
    let files = files.join(", ");
    let one = format!("log: {files} (followed)");
    if one.chars().count() <= width {
        return vec![Line::raw(one)];
    }
    let room = width.saturating_sub(2).max(2);
    let len = files.chars().count();
    let tail: String = if len > room {
        let ellipsis = theme.g.ellipsis;
        let keep = room.saturating_sub(ellipsis.chars().count());
        ellipsis
            .chars()
            .chain(files.chars().skip(len - keep))
            .collect()
    } else {
        files
    };
    vec![Line::raw("log (followed):"), Line::raw(format!("  {tail}"))]
}

/// The fields that are n/a, grouped by their reason (in field order).
fn reasons(t: &ProcessTrack) -> Vec<(Vec<&'static str>, String)> {
    let s = &t.sample;
    let fields = [
        ("device", s.device_memory.reason()),
        ("util", s.util.reason()),
        ("start", s.start_time.reason()),
        ("user", s.user.reason()),
        ("command", s.command.reason()),
        ("VMS", s.vms.reason()),
        ("RSS", s.rss.reason()),
        ("framework", s.framework.reason()),
        ("settings", s.settings.reason()),
        ("container", s.container.reason()),
    ];
    let mut groups: Vec<(Vec<&'static str>, String)> = Vec::new();
    for (field, reason) in fields {
        let Some(reason) = reason else { continue };
        match groups.iter_mut().find(|(_, r)| r == reason) {
            Some((names, _)) => names.push(field),
            None => groups.push((vec![field], reason.to_string())),
        }
    }
    groups
}
