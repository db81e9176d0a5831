//! Drawing: one pure function of `&State`.

use ratatui::Frame;

use crate::model::State;

pub fn render(frame: &mut Frame, state: &State) {
    let _ = (frame, state);
}
