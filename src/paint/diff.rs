//! The cells that changed between two frames, with their positions: the updates ratatui-core's
//! `BufferDiff` yields (wide characters, their trailing columns, skipped cells and forced
//! widths alike), and a fast path in front for the common case, an unchanged cell one column
//! wide.
#![allow(deprecated)] // `Cell::skip`, which ratatui still honours

use ratatui::buffer::{Buffer, Cell, CellDiffOption, CellWidth};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};

/// Modifiers that show on a blank cell: a wide character's trailing columns that had one are
/// written again when it is replaced by a narrow one.
const VISIBLE_ON_BLANK: Modifier = Modifier::REVERSED
    .union(Modifier::UNDERLINED)
    .union(Modifier::SLOW_BLINK)
    .union(Modifier::RAPID_BLINK)
    .union(Modifier::CROSSED_OUT);

/// The updates from `prev` to `next`: `(x, y, cell)` in reading order.
pub struct Changes<'a> {
    prev: &'a [Cell],
    next: &'a [Cell],
    area: Rect,
    pos: usize,
    trailing: Option<Trailing>,
}

/// The columns after a wide character still to check (`force`: write them whatever they hold).
struct Trailing {
    next_index: usize,
    end: usize,
    force: bool,
}

impl<'a> Changes<'a> {
    /// # Panics
    /// If the buffers differ in `x`, `y` or width, as ratatui's diff does.
    pub fn new(prev: &'a Buffer, next: &'a Buffer) -> Self {
        assert!(
            prev.area.x == next.area.x
                && prev.area.y == next.area.y
                && prev.area.width == next.area.width,
            "buffer areas differ: {:?} and {:?}",
            prev.area,
            next.area
        );
        let mut area = prev.area;
        area.height = area.height.min(next.area.height);
        Changes {
            prev: &prev.content,
            next: &next.content,
            area,
            pos: 0,
            trailing: None,
        }
    }

    fn pos_of(&self, index: usize) -> (u16, u16) {
        let w = usize::from(self.area.width.max(1));
        let x = index % w + usize::from(self.area.x);
        let y = index / w + usize::from(self.area.y);
        (x as u16, y as u16)
    }

    /// The pending trailing columns of a wide character, if one of them is to be written.
    fn next_trailing(&mut self, len: usize) -> Option<(u16, u16, &'a Cell)> {
        let t = self.trailing.as_mut()?;
        while t.next_index < t.end {
            let j = t.next_index;
            t.next_index += usize::from(self.next[j].cell_width().max(1));
            t.end = t.end.max(t.next_index).min(len);
            if !is_skip(&self.next[j])
                && (t.force || self.prev[j].symbol() != self.next[j].symbol())
            {
                let (x, y) = self.pos_of(j);
                return Some((x, y, &self.next[j]));
            }
        }
        self.pos = t.end;
        self.trailing = None;
        None
    }
}

impl<'a> Iterator for Changes<'a> {
    type Item = (u16, u16, &'a Cell);

    fn next(&mut self) -> Option<Self::Item> {
        let len = self.next.len().min(self.prev.len());
        if self.trailing.is_some()
            && let Some(update) = self.next_trailing(len)
        {
            return Some(update);
        }
        while self.pos < len {
            let i = self.pos;
            self.pos += 1;
            let current = &self.next[i];
            let previous = &self.prev[i];
            // Fast path: the same one-byte symbol and style as before (width 1: a one-byte
            // symbol is one column, as ratatui's `cell_width` counts it).
            if unchanged_narrow(current, previous) {
                continue;
            }
            match current.diff_option {
                CellDiffOption::Skip => {}
                _ if is_skip(current) => {}
                CellDiffOption::ForcedWidth(width) => {
                    self.pos = self.pos.saturating_add(usize::from(width.get()) - 1);
                    if current != previous {
                        let (x, y) = self.pos_of(i);
                        return Some((x, y, current));
                    }
                }
                CellDiffOption::None | CellDiffOption::AlwaysUpdate => {
                    let width = usize::from(current.cell_width());
                    if matches!(current.diff_option, CellDiffOption::None) && current == previous {
                        self.pos += width.saturating_sub(1);
                        continue;
                    }
                    let previous_width = usize::from(previous.cell_width());
                    // Terminals may leave a VS16 emoji's trailing column uncleared.
                    let vs16 = width > 1 && current.symbol().contains('\u{FE0F}');
                    if vs16 {
                        self.trailing = Some(Trailing {
                            next_index: i + 1,
                            end: (i + width).min(len),
                            force: false,
                        });
                    } else if width > 1 {
                        self.pos += width - 1;
                    } else if previous_width > width
                        && (previous.bg != Color::Reset
                            || previous.modifier.intersects(VISIBLE_ON_BLANK))
                    {
                        self.trailing = Some(Trailing {
                            next_index: i + 1,
                            // Clamped: ratatui's own diff reads past the end for a wide
                            // character in the last column.
                            end: (i + previous_width).min(len),
                            force: true,
                        });
                    }
                    let (x, y) = self.pos_of(i);
                    return Some((x, y, current));
                }
            }
        }
        None
    }
}

/// Equal cells of one column, drawn as ratatui draws any unchanged cell: not at all.
#[inline]
fn unchanged_narrow(a: &Cell, b: &Cell) -> bool {
    // Matched by hand: a slice comparison calls `memcmp` for every cell.
    let same_symbol = match (a.symbol().as_bytes(), b.symbol().as_bytes()) {
        ([x], [y]) => x == y,
        ([0xE2, x1, x2], [0xE2, y1, y2]) => x1 == y1 && x2 == y2 && narrow(&[0xE2, *x1, *x2]),
        _ => false,
    };
    same_symbol
        && a.fg == b.fg
        && a.bg == b.bg
        && a.underline_color == b.underline_color
        && a.modifier == b.modifier
        && matches!(a.diff_option, CellDiffOption::None)
        && matches!(b.diff_option, CellDiffOption::None)
        && !a.skip
        && !b.skip
}

/// Symbols known to be one column without a width table: one byte (ratatui counts any one-byte
/// symbol as one column), box drawing, block elements and the first geometric shapes
/// (U+2500–U+25BF), and braille (U+2800–U+28FF), which the screen's borders, bars and charts
/// are made of. Tests check every one of them against `cell_width`.
#[inline]
pub(super) fn narrow(s: &[u8]) -> bool {
    matches!(s, [_] | [0xE2, 0x94..=0x96 | 0xA0..=0xA3, _])
}

const fn is_skip(cell: &Cell) -> bool {
    matches!(cell.diff_option, CellDiffOption::Skip)
        || (cell.skip && matches!(cell.diff_option, CellDiffOption::None))
}
