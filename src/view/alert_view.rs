//! An alert read whole (Enter on it in the alerts list): its title, evidence and remedy
//! word-wrapped over the screen below the header, scrolled with Up/Down, PgUp/PgDn and the
//! wheel; Esc closes it, Enter selects its process.
//!
//! How far it can scroll depends on the screen's size, which only the view knows: the app loop
//! hands each scrolling key (and the wheel) to [`scroll`] with the terminal's size, as it does
//! a click to `mouse::action`, and gets the new first row back as `Action::AlertTop`.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Padding, Paragraph};

use super::alerts::{level_style, summary};
use super::panel::Panel;
use super::text::wrap;
use super::theme::Theme;
use crate::input::Action;
use crate::model::Alert;
use crate::screen::State;
use crate::screen::alerts::shown;

/// The open alert over `main` (the screen without its footer), under `top_block`'s header.
pub fn render(
    frame: &mut Frame,
    main: Rect,
    top_block: Panel<'static>,
    state: &State,
    theme: &Theme,
) {
    let Some(a) = state.open_alert() else {
        return;
    };
    let area = text_area(main);
    let lines = lines(state, a, theme, usize::from(area.width));
    let rows = area.height.into();
    let top = first_row(state, lines.len(), rows);
    let mut block = top_block.padding(Padding::horizontal(1));
    let position = shown(&state.screen, state.machine())
        .position(|s| std::ptr::eq(s, a))
        .map(|i| format!(" alert {} of {} ", i + 1, state.screen.alert_rows.len()));
    if let Some(p) = position {
        block = block.title_bottom(Line::styled(p, theme.title));
    }
    if lines.len() > rows {
        let last = (top + rows).min(lines.len());
        let more = if last < lines.len() {
            ", more below"
        } else {
            ""
        };
        let text = format!(" rows {}-{last} of {}{more} ", top + 1, lines.len());
        block = block.title_bottom(Line::styled(text, theme.na).right_aligned());
    }
    frame.render_widget(block, main);
    let shown: Vec<Line<'static>> = lines.into_iter().skip(top).take(rows).collect();
    frame.render_widget(Paragraph::new(shown), area);
}

/// What a key or the wheel does over the open alert on a screen of size `area`: the scrolling
/// ones become its new first row (within the text), every other action is left as it is.
pub fn scroll(area: Rect, state: &State, action: Action) -> Action {
    let Some(a) = state.open_alert() else {
        return action;
    };
    if area.width < super::MIN_WIDTH || area.height < super::MIN_HEIGHT {
        return action;
    }
    let main = Rect {
        height: area.height - 1,
        ..area
    };
    let text = text_area(main);
    let theme = Theme::new(&state.config);
    let total = lines(state, a, &theme, usize::from(text.width)).len();
    let rows = usize::from(text.height);
    let top = first_row(state, total, rows);
    let page = rows.saturating_sub(1).max(1);
    let to = match action {
        Action::Up => top.saturating_sub(1),
        Action::Down => top + 1,
        Action::PageUp => top.saturating_sub(page),
        Action::PageDown => top + page,
        Action::Scroll(by) => top.saturating_add_signed(by),
        other => return other,
    };
    Action::AlertTop(to.min(total.saturating_sub(rows)))
}

/// Where the text goes: inside the border, a column of padding on each side.
fn text_area(main: Rect) -> Rect {
    Rect {
        x: main.x + 2,
        y: main.y + 1,
        width: main.width.saturating_sub(4),
        height: main.height.saturating_sub(2),
    }
}

/// The first row shown: the one scrolled to, no further than leaves the text's end at the
/// bottom (a screen made taller shows more, never empty rows under the text).
fn first_row(state: &State, total: usize, rows: usize) -> usize {
    let top = state.screen.alert_open.as_ref().map_or(0, |o| o.top);
    top.min(total.saturating_sub(rows))
}

/// The alert's text wrapped to `width`: title, evidence, remedy, and its process.
fn lines(state: &State, a: &Alert, theme: &Theme, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let mut para = |text: &str, first: &str, rest: &str, style: Style| {
        let room = width.saturating_sub(rest.chars().count().max(first.chars().count()));
        for (i, l) in wrap(text, room).into_iter().enumerate() {
            let indent = if i == 0 { first } else { rest };
            out.push(Line::styled(format!("{indent}{l}"), style));
        }
    };
    para(&summary(a), "", "", level_style(a, theme));
    para("", "", "", Style::new());
    let confidence = a
        .confidence
        .as_ref()
        .map(|c| format!(" ({c})"))
        .unwrap_or_default();
    para(&format!("evidence{confidence}"), "", "", theme.title);
    for e in &a.evidence {
        para(e, "  ", "    ", Style::new());
    }
    if let Some(r) = &a.remedy {
        para("", "", "", Style::new());
        para("remedy", "", "", theme.title);
        para(r, "  ", "  ", Style::new());
    }
    if let Some(link) = super::life::alert_link(state, a) {
        para("", "", "", Style::new());
        para(&format!("{link}: Enter selects it"), "", "", theme.key);
    }
    out
}
