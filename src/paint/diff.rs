//! The cells that changed between two frames, with their positions: the updates ratatui-core's
//! `BufferDiff` yields (wide characters, their trailing columns, skipped cells and forced
//! widths alike), and a fast path in front for the common case, an unchanged cell one column
//! wide. Ranges of cells known to be unchanged (`keeping`) are passed over, their cells read from
//! the frame before (the new frame's buffer need not hold them).
#![allow(deprecated)] // `Cell::skip`, which ratatui still honours

use std::ops::Range;

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
    /// Cells, by index, the same in both frames, sorted; those before `pos` are done.
    kept: &'a [Range<usize>],
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
            kept: &[],
        }
    }

    /// The same updates, where the cells of `kept` (sorted ranges of indices) are known to be
    /// the same in both frames.
    pub fn keeping(mut self, kept: &'a [Range<usize>]) -> Self {
        self.kept = kept;
        self
    }

    /// Past any kept cells at `pos`, and the trailing columns of a wide character that ends a
    /// kept range, as the whole diff passes over an unchanged one; returns where the next kept
    /// range starts (or `len`).
    fn pass_kept(&mut self, len: usize) -> usize {
        while let Some((first, rest)) = self.kept.split_first() {
            if first.start > self.pos {
                return first.start.min(len);
            }
            let end = first.end.min(len);
            // Only a wide cell near the end can reach past it: then the cells are walked from
            // `pos` (where a cell starts) as the whole diff walks them. A kept cell is read
            // from the frame before, which holds it (the new frame need not).
            let window = end.saturating_sub(WIDEST).max(self.pos)..end;
            if window.clone().any(|j| columns(&self.prev[j]) > 1) {
                while self.pos < end {
                    self.pos += columns(&self.prev[self.pos]);
                }
                self.pos = self.pos.min(len);
            } else {
                self.pos = self.pos.max(end);
            }
            self.kept = rest;
        }
        len
    }

    fn pos_of(&self, index: usize) -> (u16, u16) {
        let w = usize::from(self.area.width.max(1));
        let x = index % w + usize::from(self.area.x);
        let y = index / w + usize::from(self.area.y);
        (x as u16, y as u16)
    }

    /// The new frame's cell at `index`: a kept one from the frame before, which holds it.
    fn after(&self, index: usize) -> &'a Cell {
        let kept = self.kept.iter().take_while(|r| r.start <= index);
        if kept.clone().any(|r| r.contains(&index)) {
            &self.prev[index]
        } else {
            &self.next[index]
        }
    }

    /// The pending trailing columns of a wide character, if one of them is to be written.
    fn next_trailing(&mut self, len: usize) -> Option<(u16, u16, &'a Cell)> {
        let mut t = self.trailing.take()?;
        while t.next_index < t.end {
            let j = t.next_index;
            let next = self.after(j);
            t.next_index += usize::from(next.cell_width().max(1));
            t.end = t.end.max(t.next_index).min(len);
            if !is_skip(next) && (t.force || self.prev[j].symbol() != next.symbol()) {
                let (x, y) = self.pos_of(j);
                self.trailing = Some(t);
                return Some((x, y, next));
            }
        }
        self.pos = t.end;
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
            let end = self.pass_kept(len);
            if self.pos >= end {
                continue;
            }
            // Fast path: the same narrow symbol and style as before, skipped in one pass.
            let (next, prev) = (&self.next[self.pos..end], &self.prev[self.pos..end]);
            self.pos += next
                .iter()
                .zip(prev)
                .take_while(|(n, p)| unchanged_narrow(n, p))
                .count();
            if self.pos >= end {
                continue;
            }
            let i = self.pos;
            self.pos += 1;
            let current = &self.next[i];
            let previous = &self.prev[i];
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

/// Columns before a kept range's end where a wide cell is looked for: wider than any character
/// a terminal draws (a cell forced wider than this is not looked for).
const WIDEST: usize = 4;

/// The columns the whole diff passes for an unchanged cell: a skipped cell one, any other its
/// width.
fn columns(cell: &Cell) -> usize {
    match cell.diff_option {
        CellDiffOption::ForcedWidth(width) => usize::from(width.get()),
        _ if is_skip(cell) => 1,
        _ if narrow(cell.symbol().as_bytes()) => 1,
        _ => usize::from(cell.cell_width()).max(1),
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
