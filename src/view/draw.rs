//! Text drawn straight into the frame's cells: the cells a `Paragraph` of the same lines draws
//! (unwrapped, or wrapped at spaces without trimming), without its passes that cost a frame most.
//!
//! A `Paragraph` restyles every cell of its area before drawing, searches every string for
//! grapheme clusters, and wraps every line through its word wrapper, even lines that fit. Here
//! only the cells the text covers are set, ASCII text is set a character a cell, and a line goes
//! through the wrapper only when it is wider than the area (docs/ARCHITECTURE.md, "Drawing").

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Text};
use ratatui::widgets::{Paragraph, Widget, Wrap};

use crate::paint;

/// `lines` drawn top-down into `area`, one a row, each cut at its right edge: the cells an
/// unwrapped `Paragraph` of them draws, styled the same (the line's style patched by each span's,
/// on the text's cells only). A line aligned other than left goes through a `Paragraph`, which
/// places it.
pub fn draw_lines<'a>(frame: &mut Frame, area: Rect, lines: impl Into<Text<'a>>) {
    let text = lines.into();
    if !left(text.alignment) || !text.lines.iter().all(|l| left(l.alignment)) {
        frame.render_widget(Paragraph::new(text), area);
        return;
    }
    let area = area.intersection(frame.area());
    let buf = frame.buffer_mut();
    for (line, y) in text.lines.iter().zip(area.top()..area.bottom()) {
        put_line(buf, area.x, y, line, area.width, text.style);
    }
}

/// Whether the cells of an area are there already, asked with the area and what hashes its
/// content when called (so that a caller that never keeps anything hashes nothing).
pub trait Keep: FnMut(Rect, &dyn Fn() -> u64) -> bool {}
impl<F: FnMut(Rect, &dyn Fn() -> u64) -> bool> Keep for F {}

/// `draw_lines`, a row at a time: each line's row is offered to `keep` with a hash of the line,
/// and the rows under the last line (left blank) with `BLANK`; a row `keep` answers true for is
/// not drawn (its cells are there already). Text aligned other than left is offered whole, as
/// `area` with a hash of the text.
pub fn draw_lines_kept<'a>(
    frame: &mut Frame,
    area: Rect,
    lines: impl Into<Text<'a>>,
    mut keep: impl Keep,
) {
    let text = lines.into();
    let area = area.intersection(frame.area());
    if !left(text.alignment) || !text.lines.iter().all(|l| left(l.alignment)) {
        if !keep(area, &|| paint::hash(&text)) {
            frame.render_widget(Paragraph::new(text), area);
        }
        return;
    }
    let buf = frame.buffer_mut();
    let mut rows = area.top()..area.bottom();
    for (line, y) in text.lines.iter().zip(&mut rows) {
        let row = Rect {
            y,
            height: 1,
            ..area
        };
        if !keep(row, &|| paint::hash(&(line, text.style))) {
            put_line(buf, area.x, y, line, area.width, text.style);
        }
    }
    keep(
        Rect {
            y: rows.start,
            height: rows.len() as u16,
            ..area
        },
        &|| BLANK,
    );
}

/// The stamp of rows nothing is drawn on.
pub const BLANK: u64 = 0;

/// `line` set from (`x`, `y`), at most `width` columns, its spans' styles patched onto `base`
/// patched by the line's own: `Buffer::set_line`'s cells.
pub fn put_line(buf: &mut Buffer, x: u16, y: u16, line: &Line<'_>, width: u16, base: Style) {
    let style = base.patch(line.style);
    let end = x.saturating_add(width).min(buf.area.right());
    let mut x = x;
    for span in line {
        if x >= end {
            break;
        }
        x = put_span(buf, x, y, &span.content, end - x, style.patch(span.style));
    }
}

/// `line` as `Line::render` draws it into `area` (its first row): placed by its alignment and
/// cut at the right edge, or at the left (aligned right or centred, and too wide) through
/// `Line::render` itself; text of `narrow` characters is set a character a cell.
pub fn render_line(buf: &mut Buffer, area: Rect, line: &Line<'_>) {
    render_aligned(buf, area, line, line.alignment);
}

/// `line` drawn as `render_line` draws it, placed by `alignment` rather than its own: the cells
/// of `line.clone().alignment(alignment).render(area, buf)` without the clone.
pub fn render_aligned(buf: &mut Buffer, area: Rect, line: &Line<'_>, alignment: Option<Alignment>) {
    let area = area.intersection(buf.area);
    if area.is_empty() {
        return;
    }
    let whole = |buf: &mut Buffer| {
        let mut line = line.clone();
        line.alignment = alignment;
        line.render(area, buf);
    };
    if !line.spans.iter().all(|s| s.content.chars().all(narrow)) {
        whole(buf);
        return;
    }
    let width: usize = line.spans.iter().map(|s| s.content.chars().count()).sum();
    let room = usize::from(area.width);
    if width > room && !left(alignment) {
        whole(buf);
        return;
    }
    if width == 0 {
        return;
    }
    if line.style != Style::default() {
        set_style(buf, Rect { height: 1, ..area }, line.style);
    }
    let indent = match alignment {
        Some(Alignment::Right) => room.saturating_sub(width),
        Some(Alignment::Center) => room.saturating_sub(width) / 2,
        _ => 0,
    } as u16;
    put_line(
        buf,
        area.x + indent,
        area.y,
        line,
        area.width - indent,
        Style::default(),
    );
}

/// `Buffer::set_style`: `style` patched onto every cell of `area` (clipped to the buffer), a row
/// at a time rather than through the buffer's indexing of each cell.
pub fn set_style(buf: &mut Buffer, area: Rect, style: Style) {
    let area = buf.area.intersection(area);
    if area.is_empty() {
        return;
    }
    let width = usize::from(area.width);
    for y in area.top()..area.bottom() {
        let start = buf.index_of(area.x, y);
        for cell in &mut buf.content[start..start + width] {
            cell.set_style(style);
        }
    }
}

/// `text` set from (`x`, `y`) in `style`, at most `width` columns: `Buffer::set_stringn`'s
/// cells, where ASCII text (most of the screen's) and text of `narrow` characters skip its
/// search for grapheme clusters: each character is a cell (ASCII control characters none). Returns the column after the text.
fn put_span(buf: &mut Buffer, x: u16, y: u16, text: &str, width: u16, style: Style) -> u16 {
    if !text.is_ascii() {
        if !text.chars().all(narrow) {
            return buf.set_stringn(x, y, text, usize::from(width), style).0;
        }
        let start = buf.index_of(x, y);
        let mut end = x;
        for (cell, c) in buf.content[start..]
            .iter_mut()
            .zip(text.chars().take(usize::from(width)))
        {
            cell.set_char(c).set_style(style);
            end += 1;
        }
        return end;
    }
    let start = buf.index_of(x, y);
    let mut end = x;
    let printable = text.bytes().filter(|b| !b.is_ascii_control());
    for (cell, b) in buf.content[start..]
        .iter_mut()
        .zip(printable.take(usize::from(width)))
    {
        cell.set_char(char::from(b)).set_style(style);
        end += 1;
    }
    end
}

/// A character that takes one cell and is a grapheme cluster of its own beside any other of
/// these (a test checks both against `Buffer::set_stringn`): printable ASCII, the degree sign, the
/// ellipsis, box drawing, block elements and the first geometric shapes (U+2500–U+25BF), and
/// braille: what the screen's own text, borders, bars and sparklines are made of.
pub fn narrow(c: char) -> bool {
    matches!(c, ' '..='~' | '°' | '…' | '\u{2500}'..='\u{25BF}' | '\u{2800}'..='\u{28FF}')
}

fn left(alignment: Option<Alignment>) -> bool {
    matches!(alignment, None | Some(Alignment::Left))
}

/// Lines of a paragraph wrapped at spaces (without trimming) `width` columns wide, each with the
/// rows it takes there.
pub struct Wrapped<'a> {
    lines: Vec<(Line<'a>, usize)>,
}

impl<'a> Wrapped<'a> {
    /// A line as wide as `width` or narrower takes one row as it is; a wider one is measured by
    /// ratatui's word wrapper, which wraps each line apart from the others.
    pub fn new(lines: Vec<Line<'a>>, width: u16) -> Self {
        let lines = lines
            .into_iter()
            .map(|line| {
                let rows = if width == 0 {
                    0
                } else if line.width() <= usize::from(width) {
                    1
                } else {
                    wrapping(line.clone()).line_count(width)
                };
                (line, rows)
            })
            .collect();
        Wrapped { lines }
    }

    pub fn rows(&self) -> usize {
        self.lines.iter().map(|(_, rows)| rows).sum()
    }

    /// Draws the lines into `area` (as wide as they were wrapped for), cut at its bottom: the
    /// cells a wrapping `Paragraph` of them draws.
    pub fn draw(self, frame: &mut Frame, area: Rect) {
        self.draw_kept(frame, area, |_, _| false);
    }

    /// `draw`, a line at a time: each line's rows are offered to `keep` with a hash of the line,
    /// and the rows under the last (left blank) with `BLANK`; lines `keep` answers true for are
    /// not drawn (their cells are there already).
    pub fn draw_kept(self, frame: &mut Frame, area: Rect, mut keep: impl Keep) {
        let area = area.intersection(frame.area());
        let mut y = area.top();
        for (line, rows) in self.lines {
            if y >= area.bottom() {
                break;
            }
            let height = u16::try_from(rows)
                .unwrap_or(u16::MAX)
                .min(area.bottom() - y);
            let at = Rect { y, height, ..area };
            if !keep(at, &|| paint::hash(&(&line, rows))) {
                let rest = Rect {
                    height: area.bottom() - y,
                    ..at
                };
                if rows == 1 && left(line.alignment) {
                    draw_lines(frame, rest, line);
                } else {
                    frame.render_widget(wrapping(line), rest);
                }
            }
            y += height;
        }
        keep(
            Rect {
                y,
                height: area.bottom() - y,
                ..area
            },
            &|| BLANK,
        );
    }
}

fn wrapping(line: Line<'_>) -> Paragraph<'_> {
    Paragraph::new(line).wrap(Wrap { trim: false })
}

/// `lines` as a `Paragraph` wrapping at spaces without trimming draws them into `area`.
pub fn draw_wrapped(frame: &mut Frame, area: Rect, lines: Vec<Line<'_>>) {
    Wrapped::new(lines, area.width).draw(frame, area);
}

#[cfg(test)]
mod tests;
