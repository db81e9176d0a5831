//! Panels drawn last frame, copied instead of drawn again when nothing they show has changed.
//!
//! A panel is drawn from a key: the widgets it renders, or the data it builds them from. Its
//! cells are a function of that key, its area and the cells under it before it is drawn:
//! ratatui's widgets read and write only their own area. Each frame starts blank, and panels
//! are laid out side by side (`layout.rs`), sharing at most their edges; so what lies under a
//! panel when it is drawn is blank inside and, on its edges, what a neighbour drew there (a
//! shared border, which the panel's own border merges with). When the key, the area and those
//! edge cells all equal last frame's, last frame's cells are exactly what drawing would give,
//! and copying them skips the text shaping, styling and braille plotting (most of a frame's
//! cost; README, Performance). Keys are compared whole, never hashed. Popups (help, the signal
//! dialog) are drawn over the panels afterwards and never reused.

use std::any::Any;

use ratatui::buffer::{Buffer, Cell};
use ratatui::layout::Rect;
use ratatui::widgets::{Block, Paragraph, StatefulWidget, Table, TableState, Widget};

use crate::clock::tick_times::time;

/// One widget of a panel and where it goes: a panel's key is the list of its pieces.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    Block(Block<'static>, Rect),
    Text(Paragraph<'static>, Rect),
    Table(Box<Table<'static>>, TableState, Rect),
}

/// Draws the pieces in order.
pub fn draw_pieces(pieces: &[Piece], buf: &mut Buffer) {
    for piece in pieces {
        match piece {
            Piece::Block(block, area) => block.render(*area, buf),
            Piece::Text(text, area) => text.render(*area, buf),
            Piece::Table(table, state, area) => {
                let mut state = *state;
                StatefulWidget::render(&**table, *area, buf, &mut state);
            }
        }
    }
}

/// The panels that can be reused, one slot each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Panel {
    /// The GPU block: the header, each GPU's bar and readings.
    Gpus,
    Chart,
    Processes,
    Detail,
    Alerts,
}

const PANELS: usize = 5;

impl Panel {
    /// The tick report's names for drawing the panel and for copying it.
    fn drawn(self) -> &'static str {
        match self {
            Panel::Gpus => "screen.gpus drawn",
            Panel::Chart => "screen.chart drawn",
            Panel::Processes => "screen.processes drawn",
            Panel::Detail => "screen.detail drawn",
            Panel::Alerts => "screen.alerts drawn",
        }
    }

    fn copied(self) -> &'static str {
        match self {
            Panel::Gpus => "screen.gpus copied",
            Panel::Chart => "screen.chart copied",
            Panel::Processes => "screen.processes copied",
            Panel::Detail => "screen.detail copied",
            Panel::Alerts => "screen.alerts copied",
        }
    }
}

/// What one panel drew last frame.
struct Drawn {
    key: Box<dyn Any>,
    area: Rect,
    /// The cells on the area's edges before it was drawn.
    edges: Vec<Cell>,
    after: Vec<Cell>,
}

/// Last frame's panels; `Reuse::default()` starts empty, `Reuse::off()` never keeps any.
#[derive(Default)]
pub struct Reuse {
    slots: [Option<Drawn>; PANELS],
    off: bool,
    /// Panels copied and panels drawn since the start.
    copied: u64,
    drawn: u64,
}

impl Reuse {
    /// Draws every panel every time (tests and one-off renders: nothing to reuse).
    pub fn off() -> Self {
        Reuse {
            off: true,
            ..Reuse::default()
        }
    }

    /// Panels copied and panels drawn since the start.
    pub fn counts(&self) -> (u64, u64) {
        (self.copied, self.drawn)
    }

    /// Draws `panel` into `area` of `buf` with `draw(&key, buf)`, or copies last frame's cells
    /// when its key, area and the cells under it are the same.
    pub fn draw<K: PartialEq + 'static>(
        &mut self,
        buf: &mut Buffer,
        panel: Panel,
        area: Rect,
        key: K,
        draw: impl FnOnce(&K, &mut Buffer),
    ) {
        if self.off {
            draw(&key, buf);
            return;
        }
        // Widgets draw only inside the buffer: the part of `area` there is what they can change.
        let inside = buf.area.intersection(area);
        let slot = &mut self.slots[panel as usize];
        if let Some(last) = slot.as_ref()
            && last.area == area
            && last.key.downcast_ref::<K>() == Some(&key)
            && edges(buf, inside).eq(last.edges.iter())
        {
            time(panel.copied(), || put_cells(buf, inside, &last.after));
            self.copied += 1;
            return;
        }
        let before = edges(buf, inside).cloned().collect();
        time(panel.drawn(), || draw(&key, buf));
        *slot = Some(Drawn {
            key: Box::new(key),
            area,
            edges: before,
            after: cells(buf, inside),
        });
        self.drawn += 1;
    }
}

/// The rows of `area` in `buf`, one slice each (`area` lies inside the buffer).
fn rows(buf: &Buffer, area: Rect) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    (area.top()..area.bottom()).map(move |y| {
        let start = buf.index_of(area.x, y);
        start..start + usize::from(area.width)
    })
}

fn cells(buf: &Buffer, area: Rect) -> Vec<Cell> {
    let mut out = Vec::with_capacity(usize::from(area.width) * usize::from(area.height));
    for row in rows(buf, area) {
        out.extend_from_slice(&buf.content[row]);
    }
    out
}

/// The cells on the edges of `area` (top and bottom rows, then the left and right columns
/// between them), in a fixed order; `area` lies inside the buffer.
fn edges(buf: &Buffer, area: Rect) -> impl Iterator<Item = &Cell> {
    let mut at = Vec::new();
    if !area.is_empty() {
        let (top, bottom) = (area.top(), area.bottom() - 1);
        let (left, right) = (area.left(), area.right() - 1);
        for y in [top, bottom]
            .into_iter()
            .take(if top == bottom { 1 } else { 2 })
        {
            at.extend((left..=right).map(|x| buf.index_of(x, y)));
        }
        for y in top + 1..bottom {
            at.push(buf.index_of(left, y));
            if right != left {
                at.push(buf.index_of(right, y));
            }
        }
    }
    at.into_iter().map(|i| &buf.content[i])
}

fn put_cells(buf: &mut Buffer, area: Rect, saved: &[Cell]) {
    let width = usize::from(area.width);
    let ranges: Vec<_> = rows(buf, area).collect();
    for (row, src) in ranges.into_iter().zip(saved.chunks(width.max(1))) {
        buf.content[row].clone_from_slice(src);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn para(text: &str) -> Paragraph<'static> {
        Paragraph::new(text.to_string()).block(Block::bordered())
    }

    fn draw(reuse: &mut Reuse, buf: &mut Buffer, area: Rect, text: &str) {
        reuse.draw(buf, Panel::Detail, area, para(text), |p, b| {
            p.render(area, b)
        });
    }

    #[test]
    fn copies_only_when_key_area_and_cells_under_it_are_the_same() {
        let full = Rect::new(0, 0, 20, 6);
        let area = Rect::new(2, 1, 12, 4);
        let mut reuse = Reuse::default();
        let fresh = |under: Option<&str>| {
            let mut b = Buffer::empty(full);
            if let Some(s) = under {
                b.set_string(2, 1, s, ratatui::style::Style::new());
            }
            b
        };
        let mut b = fresh(None);
        draw(&mut reuse, &mut b, area, "hello");
        assert_eq!((reuse.copied, reuse.drawn), (0, 1));

        let mut again = fresh(None);
        draw(&mut reuse, &mut again, area, "hello");
        assert_eq!((reuse.copied, reuse.drawn), (1, 1));
        assert_eq!(again, b);

        // Another text, another area, other cells under it: each is drawn anew, and matches a
        // drawing without reuse.
        for (text, area, under) in [
            ("world", area, None),
            ("world", Rect::new(1, 1, 12, 4), None),
            ("world", Rect::new(1, 1, 12, 4), Some("x")),
        ] {
            let drawn = reuse.drawn;
            let mut got = fresh(under);
            draw(&mut reuse, &mut got, area, text);
            let mut want = fresh(under);
            para(text).render(area, &mut want);
            assert_eq!(got, want);
            assert_eq!(reuse.drawn, drawn + 1);
        }
    }

    #[test]
    fn off_never_keeps_a_panel() {
        let mut reuse = Reuse::off();
        let area = Rect::new(1, 1, 8, 3);
        let mut b = Buffer::empty(Rect::new(0, 0, 10, 5));
        draw(&mut reuse, &mut b, area, "x");
        let mut c = Buffer::empty(Rect::new(0, 0, 10, 5));
        draw(&mut reuse, &mut c, area, "x");
        assert_eq!((reuse.copied, reuse.drawn), (0, 0));
        assert_eq!(b, c);
    }
}
