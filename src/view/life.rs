//! A process's life in words: its growth over the short window and its last change of memory,
//! and for one that exited, when, why (the failure's evidence and remedy when a log said), for
//! the process table and the detail pane.

use ratatui::text::{Line, Span};

use super::theme::Theme;
use crate::model::{GROWTH_WINDOW_MS, ProcessTrack, units};
use crate::screen::State;

/// "exited 12s ago", with its cause when known: "exited 12s ago, OOM: fragmentation".
pub fn exit_label(state: &State, t: &ProcessTrack) -> Option<String> {
    let exited = t.exited_ms?;
    let ago = units::duration_ms(state.machine().now_ms.saturating_sub(exited));
    let cause = state.exit_cause(t)?.label();
    Some(if cause == "exited" {
        format!("exited {ago} ago")
    } else {
        format!("exited {ago} ago, {cause}")
    })
}

/// "growth flat over 10s, last change +11.9G 40s ago".
pub fn growth_line(state: &State, t: &ProcessTrack, theme: &Theme) -> Line<'static> {
    let window = units::duration_ms(GROWTH_WINDOW_MS);
    let mut spans = vec![Span::raw("growth ")];
    spans.push(match (t.exited_ms, t.growth) {
        (Some(_), _) => Span::styled("none (exited)", theme.na),
        (None, Some(g)) => Span::raw(format!("{} over {window}", units::growth(g))),
        (None, None) => Span::styled(format!("n/a (needs {window} of readings)"), theme.na),
    });
    if let Some(c) = t.last_change {
        let ago = units::duration_ms(state.machine().now_ms.saturating_sub(c.at_ms));
        spans.push(Span::raw(format!(
            ", last change {} {ago} ago",
            units::change(c.by)
        )));
    }
    Line::from(spans)
}

/// The detail pane's lines about the process's life: its growth, and for one that exited, when
/// and why, with the evidence and remedy of the alert that explains it.
pub fn detail_lines(t: &ProcessTrack, state: &State, theme: &Theme) -> Vec<Line<'static>> {
    let mut out = vec![growth_line(state, t, theme)];
    let Some(label) = exit_label(state, t) else {
        return out;
    };
    out.push(Line::styled(label, theme.alert));
    let alert = state.exit_cause(t).and_then(|c| c.alert().cloned());
    if let Some(a) = alert {
        out.extend(a.evidence.iter().map(|e| Line::raw(format!("  {e}"))));
        if let Some(r) = &a.remedy {
            out.push(Line::from(vec![
                Span::styled("remedy ", theme.title),
                Span::raw(r.clone()),
            ]));
        }
    }
    out
}

/// An alert's link to its process: "pid 873 exited 12s ago", "pid 873 is running".
pub fn alert_link(state: &State, a: &crate::model::Alert) -> Option<String> {
    let t = state.process_of(a)?;
    let now = match exit_label(state, t) {
        Some(label) => label,
        None => "is running".into(),
    };
    Some(format!("pid {} {now}", t.key.pid))
}
