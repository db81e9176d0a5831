//! The footer: the main keys (an open alert's own) and the status message, the filter prompt
//! while it is open, or `gpumon run`'s question when the user quits while its command runs.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::text::fit;
use super::theme::Theme;
use crate::screen::State;

/// The keys the footer names over an open alert.
const ALERT_HINTS: [(&str, &str); 4] = [
    ("Esc", "close"),
    ("Up Down PgUp PgDn", "scroll"),
    ("Enter", "its process"),
    ("q", "quit"),
];

/// The keys the footer names, in order; the help overlay lists them all.
const HINTS: [(&str, &str); 6] = [
    ("q", "quit"),
    ("/", "filter"),
    ("s", "snapshot"),
    ("p", "pause"),
    ("o", "sort"),
    ("?", "help"),
];

/// The footer's line, `width` columns wide at most.
pub fn line(state: &State, theme: &Theme, width: u16) -> Line<'static> {
    let width = usize::from(width);
    if let Some(r) = state.screen.run.as_ref().filter(|r| r.asking) {
        let keys = [
            ("k", " stop it  "),
            ("l", " leave it running  "),
            ("Esc", " cancel"),
        ];
        let keys_len: usize = keys.iter().map(|(k, w)| k.len() + w.len()).sum();
        let room = width.saturating_sub(keys_len + " is still running: ".len() + 1);
        let mut spans = vec![Span::raw(format!(
            " {} is still running: ",
            fit(&r.command, room, theme.g.ellipsis)
        ))];
        for (key, what) in keys {
            spans.push(Span::styled(key, theme.key));
            spans.push(Span::raw(what));
        }
        return Line::from(spans);
    }
    if let Some(text) = &state.screen.prompt {
        let line = Line::from(vec![
            Span::styled(" filter: ", theme.key),
            Span::raw(crate::sample::pool_map::printable(text, 64)),
            Span::raw(theme.g.cursor),
            Span::styled(" (Enter apply, Esc cancel)", theme.na),
        ]);
        return line;
    }
    let status = state
        .screen
        .status
        .as_ref()
        .map(|s| fit(s, width.saturating_sub(2), theme.g.ellipsis));
    let status_len = status.as_ref().map_or(0, |s| s.chars().count() + 2);
    let mut spans = Vec::new();
    let mut used = 0;
    let hints: &[(&str, &str)] = if state.open_alert().is_some() {
        &ALERT_HINTS
    } else {
        &HINTS
    };
    for &(key, what) in hints {
        let len = 1 + key.len() + 1 + what.len() + 1;
        if used + len + status_len > width {
            break;
        }
        used += len;
        spans.push(Span::raw(" "));
        spans.push(Span::styled(key, theme.key));
        spans.push(Span::raw(format!(" {what} ")));
    }
    if let Some(s) = status {
        let pad = width.saturating_sub(used + s.chars().count() + 1);
        spans.push(Span::raw(" ".repeat(pad)));
        spans.push(Span::styled(s, Style::new()));
    }
    Line::from(spans)
}
