//! The screen's bordered panels: all four borders, merged where panels meet
//! (`MergeStrategy::Exact`), titles on the top and bottom borders and padding inside.
//!
//! ratatui's `Block` draws the same borders and titles, but it first restyles every cell of its
//! area with its own style, an empty one here; for a frame's six panels that pass was a tenth of
//! the frame's instructions (callgrind, docs/ARCHITECTURE.md). A panel has no style of its own,
//! so it touches only its border cells and its titles; the cells it leaves are `Block`'s (a test
//! draws both).

use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Rect};
use ratatui::symbols::border;
use ratatui::symbols::merge::MergeStrategy;
use ratatui::text::Line;
use ratatui::widgets::{Padding, Widget};

use super::draw::render_line;

/// A bordered panel, built like a `Block::bordered()` with its border set and merged borders.
#[derive(Debug, Clone, Hash)]
pub struct Panel<'a> {
    set: border::Set<'a>,
    top: Vec<Line<'a>>,
    bottom: Vec<Line<'a>>,
    padding: Padding,
}

impl<'a> Panel<'a> {
    pub fn new(set: border::Set<'a>) -> Self {
        Panel {
            set,
            top: Vec::new(),
            bottom: Vec::new(),
            padding: Padding::ZERO,
        }
    }

    /// A title on the top border: at its left, or at its right for a right-aligned line.
    pub fn title(mut self, line: impl Into<Line<'a>>) -> Self {
        self.top.push(line.into());
        self
    }

    /// A title on the bottom border, placed as `title` places one on the top.
    pub fn title_bottom(mut self, line: impl Into<Line<'a>>) -> Self {
        self.bottom.push(line.into());
        self
    }

    pub fn padding(mut self, padding: Padding) -> Self {
        self.padding = padding;
        self
    }

    /// The area inside the borders and the padding.
    pub fn inner(&self, area: Rect) -> Rect {
        let x = area.x.saturating_add(1).min(area.right());
        let y = area.y.saturating_add(1).min(area.bottom());
        let p = self.padding;
        Rect {
            x: x.saturating_add(p.left),
            y: y.saturating_add(p.top),
            width: area
                .width
                .saturating_sub(2)
                .saturating_sub(p.left.saturating_add(p.right)),
            height: area
                .height
                .saturating_sub(2)
                .saturating_sub(p.top.saturating_add(p.bottom)),
        }
    }

    fn borders(&self, area: Rect, buf: &mut Buffer) {
        let (left, top) = (area.left(), area.top());
        let right = area.right().saturating_sub(1);
        let bottom = area.bottom().saturating_sub(1);
        let stride = usize::from(buf.area.width);
        // The sides stop short of the corners, which are merged last (as `Block` does: a corner
        // merged onto a side's symbol could merge to the wrong one).
        let across = usize::from(right.saturating_sub(left).saturating_sub(1));
        let down = usize::from(bottom.saturating_sub(top).saturating_sub(1));
        let sides = [
            (left, top + 1, stride, down, self.set.vertical_left),
            (left + 1, top, 1, across, self.set.horizontal_top),
            (right, top + 1, stride, down, self.set.vertical_right),
            (left + 1, bottom, 1, across, self.set.horizontal_bottom),
        ];
        for (x, y, step, count, symbol) in sides {
            if count == 0 {
                continue;
            }
            let first = buf.index_of(x, y);
            for i in (first..).step_by(step).take(count) {
                merge(&mut buf.content[i], symbol);
            }
        }
        for (x, y, symbol) in [
            (right, bottom, self.set.bottom_right),
            (right, top, self.set.top_right),
            (left, bottom, self.set.bottom_left),
            (left, top, self.set.top_left),
        ] {
            let i = buf.index_of(x, y);
            merge(&mut buf.content[i], symbol);
        }
    }
}

/// `symbol` merged onto `cell` as `MergeStrategy::Exact` merges it, except that a blank cell
/// takes the symbol as it is without parsing both symbols into their lines (most border cells:
/// a frame starts blank), and a cell that has the symbol already keeps it. `Block` keeps a blank that was set (a text's space) and draws on an
/// empty cell; a cell does not tell the two apart, and no panel's border lies on another's text.
fn merge(cell: &mut ratatui::buffer::Cell, symbol: &str) {
    let was = cell.symbol();
    if was == " " {
        cell.set_symbol(symbol);
    } else if was != symbol {
        // A symbol merged onto itself is itself (the edges neighbours share).
        cell.merge_symbol(symbol, MergeStrategy::Exact);
    }
}

/// Draws `titles` on row `y` between the side borders of `area`: those aligned left from the
/// left in order, then those aligned right from the right, each a column apart, cut where the
/// row ends (the placement `Block` gives them).
fn titles(titles: &[Line<'_>], area: Rect, y: u16, buf: &mut Buffer) {
    let row = Rect {
        x: area.left().saturating_add(1),
        y,
        width: area.width.saturating_sub(2),
        height: 1,
    };
    let right = |l: &&Line<'_>| l.alignment == Some(Alignment::Right);
    let mut left_room = row;
    for title in titles.iter().filter(|l| !right(l)) {
        if left_room.is_empty() {
            break;
        }
        let width = line_width(title);
        let area = Rect {
            width: width.min(left_room.width),
            ..left_room
        };
        render_line(buf, area, title);
        let advance = width.saturating_add(1);
        left_room.x = left_room.x.saturating_add(advance);
        left_room.width = left_room.width.saturating_sub(advance);
    }
    let mut right_room = row;
    for title in titles.iter().filter(right).rev() {
        if right_room.is_empty() {
            break;
        }
        let width = line_width(title);
        let area = Rect {
            x: right_room
                .right()
                .saturating_sub(width)
                .max(right_room.left()),
            width: width.min(right_room.width),
            ..right_room
        };
        render_line(buf, area, title);
        right_room.width = right_room.width.saturating_sub(width).saturating_sub(1);
    }
}

fn line_width(line: &Line<'_>) -> u16 {
    u16::try_from(line.width()).unwrap_or(u16::MAX)
}

impl Widget for Panel<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        Widget::render(&self, area, buf);
    }
}

impl Widget for &Panel<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let area = area.intersection(buf.area);
        if area.is_empty() {
            return;
        }
        self.borders(area, buf);
        titles(&self.top, area, area.top(), buf);
        titles(&self.bottom, area, area.bottom().saturating_sub(1), buf);
    }
}

#[cfg(test)]
mod tests;
