//! A frame onto the terminal: the screen renders into ratatui's buffer, and only the cells that
//! changed since the last frame are written, found by `diff::Changes`; two buffers in all, as
//! ratatui's own `draw` keeps.
//!
//! A frame may stamp regions (`Stamps`): a region stamped as in the frame before need not be
//! drawn; its cells are those shown, which stay where they are, and are not compared. The other
//! cells are moved from the page into the frame shown.
//!
//! ratatui's own `Terminal::draw` does the same through `Buffer::diff_iter`, which calls an
//! out-of-line `Cell::eq` and measures both cells' widths for every cell of the screen, a third
//! of a frame's instructions (callgrind, a replay at 120x40) though most cells do not change.
//! `Changes` yields the same updates and skips an unchanged cell of one column with a few
//! comparisons.

mod diff;
mod stamps;
#[cfg(test)]
mod tests;

use std::ops::Range;

use ratatui::backend::Backend;
use ratatui::buffer::Buffer;
use ratatui::{Frame, Terminal};

use diff::Changes;
pub use stamps::{Stamps, hash, hasher, join};

/// The cells on the terminal. The frame is rendered into the terminal's current buffer, and its
/// second buffer, which ratatui's own `draw` diffs against and this painter does not use, is
/// kept empty: a buffer is about 0.23 MB at 120x40.
#[derive(Default)]
pub struct Painter {
    /// What the terminal shows (as far as gpumon wrote it).
    shown: Buffer,
    /// The positions of the cells a frame changes (kept for its capacity).
    changed: Vec<(u16, u16)>,
    /// The terminal was cleared since `shown` was written: the next frame writes every cell.
    stale: bool,
    /// The regions `shown` stamped.
    stamps: Stamps,
    /// The cells a frame need not compare nor move (kept for its capacity).
    kept: Vec<Range<usize>>,
}

impl Painter {
    /// Renders a frame with `render` and writes the cells that changed; the cursor stays hidden.
    /// `render` is given the regions the frame on the terminal stamped, and returns this
    /// frame's: a region it stamps as before it may leave undrawn, and it shows what it showed.
    pub fn draw<B: Backend>(
        &mut self,
        terminal: &mut Terminal<B>,
        render: impl FnOnce(&mut Frame, &Stamps) -> Stamps,
    ) -> Result<(), B::Error> {
        let area = terminal.get_frame().area();
        // `swap_buffers` blanks the buffer it leaves: first the spare (emptied here; ratatui
        // sizes it again on a resize), then the page the last frame left.
        terminal.swap_buffers();
        *terminal.current_buffer_mut() = Buffer::default();
        terminal.swap_buffers();
        let page = terminal.current_buffer_mut();
        if page.area != area {
            page.resize(area);
            page.reset();
        }
        if self.stale || self.shown.area != area {
            // ratatui clears the screen when the viewport is resized or cleared.
            self.shown = Buffer::empty(area);
            self.stamps = Stamps::default();
            self.stale = false;
        }
        let stamps = render(&mut terminal.get_frame(), &self.stamps);
        stamps.kept(area, &mut self.kept);
        self.stamps = stamps;
        self.changed.clear();
        let page = terminal.current_buffer_mut();
        self.changed.extend(
            Changes::new(&self.shown, page)
                .keeping(&self.kept)
                .map(|(x, y, _)| (x, y)),
        );
        // The new frame becomes the one shown: its cells are moved over, but for the regions
        // stamped as before, whose cells the frame shown holds already (drawn or not there).
        // The page, left with the cells moved out, is blanked for the next frame.
        let len = page.content.len().min(self.shown.content.len());
        let mut from = 0;
        for range in self.kept.iter().chain([&(len..len)]) {
            let to = range.start.min(len);
            if from < to {
                page.content[from..to].swap_with_slice(&mut self.shown.content[from..to]);
            }
            from = from.max(range.end);
        }
        let shown = &self.shown;
        terminal
            .backend_mut()
            .draw(self.changed.iter().map(|&(x, y)| (x, y, &shown[(x, y)])))?;
        terminal.hide_cursor()?;
        terminal.backend_mut().flush()
    }

    /// The terminal was cleared (`Terminal::clear`, `Terminal::resize`): the next frame is
    /// written whole.
    pub fn invalidate(&mut self) {
        self.stale = true;
    }
}
