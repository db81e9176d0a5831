//! Mouse clicks and the wheel, hit-tested against the regions `render` draws into.
//!
//! The app loop calls [`action`] with the current state and terminal size when a mouse event
//! comes. It redraws before it waits for events, so the screen the user clicked on is the one
//! this state and size lay out: the same `layout::plan` gives the same rectangles, and nothing
//! about the last frame has to be kept (in `State` or elsewhere).

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use super::{processes, regions};
use crate::input::Action;
use crate::screen::State;

/// Rows the wheel moves the selection per notch.
const WHEEL_ROWS: isize = 3;

/// What a mouse event on a screen of size `area` does: a click on a process row selects it, on
/// an alert selects it (on the selected one in the alerts pane, opens it), on a GPU's lines
/// focuses that GPU; the wheel over the table or the alerts moves their selection, over an
/// open alert scrolls it.
pub fn action(area: Rect, state: &State, event: MouseEvent) -> Option<Action> {
    if state.screen.help || state.screen.prompt.is_some() || state.asking() {
        return None;
    }
    // An open alert covers the screen: the wheel scrolls it (the app loop measures how far).
    if state.open_alert().is_some() {
        return match event.kind {
            MouseEventKind::ScrollDown => Some(Action::Scroll(WHEEL_ROWS)),
            MouseEventKind::ScrollUp => Some(Action::Scroll(-WHEEL_ROWS)),
            _ => None,
        };
    }
    let r = regions(area, state)?;
    let at = Position::new(event.column, event.row);
    let on_alerts = r.alerts.filter(|a| a.contains(at));
    match event.kind {
        MouseEventKind::Down(MouseButton::Left) => {
            if r.table.contains(at) {
                return processes::row_at(r.table, state, at.y).map(Action::SelectRow);
            }
            if let Some(alerts) = on_alerts {
                return super::alerts::row_at(alerts, state, at.y).map(Action::SelectAlert);
            }
            let gpu = r.gpus.iter().position(|g| g.contains(at))?;
            u8::try_from(gpu).ok().map(Action::ClickGpu)
        }
        MouseEventKind::ScrollDown if r.table.contains(at) => Some(Action::Scroll(WHEEL_ROWS)),
        MouseEventKind::ScrollUp if r.table.contains(at) => Some(Action::Scroll(-WHEEL_ROWS)),
        MouseEventKind::ScrollDown if on_alerts.is_some() => Some(Action::WheelAlerts(1)),
        MouseEventKind::ScrollUp if on_alerts.is_some() => Some(Action::WheelAlerts(-1)),
        _ => None,
    }
}
