//! The alerts panel: newest first; with the alerts pane active, the selected alert's evidence
//! and remedy fill the space under the list.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Padding;

use super::Stamping;
use super::draw::{draw_lines, draw_wrapped};
use super::panel::Panel;
use super::text::{fit, rows, wrap};
use super::theme::Theme;
use crate::model::{Alert, Level, units};
use crate::screen::alerts::shown;
use crate::screen::{Pane, State};

pub fn render(
    frame: &mut Frame,
    area: Rect,
    block: Panel<'static>,
    state: &State,
    theme: &Theme,
    stamps: &mut Stamping,
) {
    let alerts: Vec<&Alert> = shown(&state.screen, state.machine()).collect();
    let mut title = format!(" alerts ({})", alerts.len());
    if let Some(hidden) = &state.screen.alerts_hidden {
        title = format!("{title}, {hidden}");
    }
    if state.machine().alerts_dropped > 0 {
        title = format!("{title}, {} older dropped", state.machine().alerts_dropped);
    }
    if state.screen.pane == Pane::Alerts {
        title.push_str(&format!("{}Enter opens, a returns", theme.g.sep));
    } else if !alerts.is_empty() {
        title.push_str(&format!("{}a for details", theme.g.sep));
    }
    let block = block
        .title(Line::styled(format!("{title} "), theme.title))
        .padding(Padding::horizontal(1));
    let inner = block.inner(area);
    stamps.panel(block, area);
    if alerts.is_empty() {
        stamps.draw_lines(frame, inner, Line::styled("no alerts", theme.na));
        return;
    }
    let width = usize::from(inner.width);
    let active = state.screen.pane == Pane::Alerts;
    let height = usize::from(inner.height);
    if !active {
        stamps.draw_lines(frame, inner, list(&alerts, theme, width, height));
        return;
    }
    // The list keeps a third of the panel, scrolled to the selection; the rest is the detail.
    let list_rows = (height / 3).max(1).min(alerts.len());
    let first = state.screen.alert_selected.saturating_sub(list_rows - 1);
    let lines: Vec<Line<'static>> = alerts
        .iter()
        .enumerate()
        .skip(first)
        .take(list_rows)
        .map(|(i, a)| {
            let selected = i == state.screen.alert_selected;
            let marker = if selected { "> " } else { "  " };
            let style = if selected {
                theme.selected
            } else {
                level_style(a, theme)
            };
            Line::styled(
                fit(&format!("{marker}{}", summary(a)), width, theme.g.ellipsis),
                style,
            )
        })
        .collect();
    let rows = u16::try_from(list_rows).unwrap_or(u16::MAX);
    let top = Rect {
        height: rows,
        ..inner
    };
    let rest = Rect {
        y: inner.y + rows,
        height: inner.height.saturating_sub(rows),
        ..inner
    };
    draw_lines(frame, top, lines);
    if let Some(a) = alerts.get(state.screen.alert_selected) {
        let mut lines = evidence(a, theme);
        // Under its title, so a long evidence list never hides it.
        if let Some(link) = super::life::alert_link(state, a) {
            lines.insert(2, Line::styled(link, theme.key));
        }
        draw_wrapped(frame, rest, lines);
    }
}

/// The alert (its position in the list) drawn at screen row `y` of the panel in `area`, for a
/// click: the same layout `render` draws.
pub(super) fn row_at(area: Rect, state: &State, y: u16) -> Option<usize> {
    let inner = Panel::new(ratatui::symbols::border::PLAIN)
        .padding(Padding::horizontal(1))
        .inner(area);
    let row = usize::from(y.checked_sub(inner.y).filter(|r| *r < inner.height)?);
    let alerts: Vec<&Alert> = shown(&state.screen, state.machine()).collect();
    let (width, height) = (usize::from(inner.width), usize::from(inner.height));
    if state.screen.pane == Pane::Alerts {
        let list_rows = (height / 3).max(1).min(alerts.len());
        let first = state
            .screen
            .alert_selected
            .saturating_sub(list_rows.saturating_sub(1));
        return (row < list_rows).then_some(first + row);
    }
    let heights: Vec<usize> = alerts
        .iter()
        .map(|a| wrap(&summary(a), width).len())
        .collect();
    let all_fit = heights.iter().sum::<usize>() <= height;
    let mut top = 0;
    let shown = listed(heights.len(), height);
    for (i, h) in heights.into_iter().take(shown).enumerate() {
        top += if all_fit { h } else { 1 };
        if row < top {
            return Some(i);
        }
    }
    None
}

/// Rows the panel's text takes at `width` columns (its border and padding excluded): every
/// alert wrapped, or with the alerts pane active the selected one's evidence under the list.
pub fn wanted(state: &State, width: u16) -> usize {
    let width = usize::from(width);
    let alerts: Vec<&Alert> = shown(&state.screen, state.machine()).collect();
    if state.screen.pane == Pane::Alerts
        && let Some(a) = alerts.get(state.screen.alert_selected)
    {
        let theme = Theme::new(&state.config);
        let evidence = rows(&evidence(a, &theme), width);
        // The list keeps a third of the panel.
        return evidence + evidence / 2 + 1;
    }
    alerts
        .iter()
        .map(|a| wrap(&summary(a), width).len())
        .sum::<usize>()
        .max(1)
}

/// Every alert, one per line, wrapped when they all fit that way; when even one a line they do
/// not, the last line says how many more there are.
fn list(alerts: &[&Alert], theme: &Theme, width: usize, height: usize) -> Vec<Line<'static>> {
    let wrapped: Vec<Vec<String>> = alerts.iter().map(|a| wrap(&summary(a), width)).collect();
    let all_fit = wrapped.iter().map(Vec::len).sum::<usize>() <= height;
    let shown = listed(alerts.len(), height);
    let mut lines: Vec<Line<'static>> = alerts
        .iter()
        .zip(wrapped)
        .take(shown)
        .flat_map(|(a, lines)| {
            let style = level_style(a, theme);
            let lines = if all_fit {
                lines
            } else {
                vec![fit(&summary(a), width, theme.g.ellipsis)]
            };
            lines.into_iter().map(move |l| Line::styled(l, style))
        })
        .collect();
    if shown < alerts.len() {
        let more = format!("+{} more{}a lists them", alerts.len() - shown, theme.g.sep);
        lines.push(Line::styled(fit(&more, width, theme.g.ellipsis), theme.na));
    }
    lines
}

/// How many of `len` alerts the list shows one a line in `height` rows: all, or one row fewer
/// than there are, the last row saying how many more.
fn listed(len: usize, height: usize) -> usize {
    if len <= height {
        len
    } else {
        height.saturating_sub(1)
    }
}

pub(super) fn level_style(a: &Alert, theme: &Theme) -> Style {
    match a.level {
        Level::Failure => theme.alert,
        Level::Suspected | Level::Info => Style::new(),
        Level::Notice => theme.na,
    }
}

/// "12:03:07 pid 4400 PyTorch OOM: fragmentation, …": titles name the pid and the class.
pub(super) fn summary(a: &Alert) -> String {
    format!("{} {}", units::clock(a.at_ms), a.title)
}

/// The selected alert's evidence and remedy.
fn evidence(a: &Alert, theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::raw(""),
        Line::styled(summary(a), level_style(a, theme)),
    ];
    let confidence = a
        .confidence
        .as_ref()
        .map(|c| format!(" ({c})"))
        .unwrap_or_default();
    lines.push(Line::from(vec![
        Span::styled("evidence", theme.title),
        Span::raw(confidence),
    ]));
    lines.extend(a.evidence.iter().map(|e| Line::raw(format!("  {e}"))));
    if let Some(r) = &a.remedy {
        lines.push(Line::from(vec![
            Span::styled("remedy ", theme.title),
            Span::raw(r.clone()),
        ]));
    }
    lines
}
