//! A frame onto the terminal: the screen renders into ratatui's buffer, and only the cells that
//! changed since the last frame are written, found by `diff::Changes`.
//!
//! ratatui's own `Terminal::draw` does the same through `Buffer::diff_iter`, which calls an
//! out-of-line `Cell::eq` and measures both cells' widths for every cell of the screen, a third
//! of a frame's instructions (callgrind, a replay at 120x40) though most cells do not change.
//! `Changes` yields the same updates and skips an unchanged cell of one column with a few
//! comparisons.

mod diff;
#[cfg(test)]
mod tests;

use ratatui::backend::Backend;
use ratatui::buffer::Buffer;
use ratatui::{Frame, Terminal};

pub use diff::Changes;

/// The cells on the terminal, and a buffer to render the next frame into.
#[derive(Default)]
pub struct Painter {
    /// What the terminal shows (as far as gpumon wrote it).
    shown: Buffer,
    /// The frame just rendered; after it is written, the spare the next frame is rendered into.
    drawn: Buffer,
    /// The terminal was cleared since `shown` was written: the next frame writes every cell.
    stale: bool,
}

impl Painter {
    /// Renders a frame with `render` and writes the cells that changed; the cursor stays hidden.
    pub fn draw<B: Backend>(
        &mut self,
        terminal: &mut Terminal<B>,
        render: impl FnOnce(&mut Frame),
    ) -> Result<(), B::Error> {
        let area = terminal.get_frame().area();
        // The terminal's current buffer is only ever a blank page to render into.
        let page = terminal.current_buffer_mut();
        if page.area != area {
            page.resize(area);
        }
        page.reset();
        render(&mut terminal.get_frame());
        std::mem::swap(terminal.current_buffer_mut(), &mut self.drawn);
        if self.stale || self.shown.area != area {
            // ratatui clears the screen when the viewport is resized or cleared.
            self.shown = Buffer::empty(area);
            self.stale = false;
        }
        terminal
            .backend_mut()
            .draw(Changes::new(&self.shown, &self.drawn))?;
        terminal.hide_cursor()?;
        std::mem::swap(&mut self.shown, &mut self.drawn);
        terminal.backend_mut().flush()
    }

    /// The terminal was cleared (`Terminal::clear`, `Terminal::resize`): the next frame is
    /// written whole.
    pub fn invalidate(&mut self) {
        self.stale = true;
    }
}
