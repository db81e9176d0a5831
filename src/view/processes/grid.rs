//! The process table's cells, drawn as ratatui's `Table` draws one-line rows with a header, the
//! selection marker's column and the selected row highlighted: the same column widths (the same
//! `Layout`), the same styles applied in the same order, and each cell's line placed as
//! `Line::render` places it.
//!
//! Why not `Table`: it restyles each cell's area three times (the cell's, its text's and its
//! line's style, all empty here) and searches every cell's text for grapheme clusters; for the
//! table of one process on a GPU machine's screen that was a seventh of a frame's instructions
//! (callgrind). Here a cell of `narrow` text is set a character a cell, and any other goes
//! through `Line::render`. A test draws both and compares every cell.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::Line;

use crate::view::draw::{put_line, render_line, set_style};
use crate::view::split;

/// The selection marker, drawn before the selected row (its column is kept on every row).
pub const MARKER: &str = "> ";

/// A row of cells, one per column, and the style laid under them.
pub struct Row {
    pub cells: Vec<Line<'static>>,
    pub style: Style,
}

/// A header and rows drawn into `area`, one line each, `widths` apart by one column, after the
/// marker's column; `selected` (an index into `rows`) is drawn with the marker and `highlight`.
pub struct Grid<'a> {
    pub header: Row,
    pub rows: &'a [Row],
    pub widths: &'a [Constraint],
    pub selected: Option<usize>,
    pub highlight: Style,
    /// Lines not drawn (their cells are there already): the header first, then the rows.
    pub skip: &'a [bool],
}

impl Grid<'_> {
    pub fn render(self, area: Rect, buf: &mut Buffer) {
        let area = area.intersection(buf.area);
        if area.is_empty() {
            return;
        }
        let marker = MARKER.len() as u16;
        let after_marker = split::row(
            Rect::new(0, 0, area.width, 1),
            &[Constraint::Length(marker), Constraint::Fill(0)],
            0,
        )[1];
        let columns = split::row(after_marker, self.widths, 1);
        let [header, body] = split::first_row(area);
        let skip = |line: usize| self.skip.get(line) == Some(&true);
        if !skip(0) {
            draw_row(buf, header, &self.header, &columns);
        }
        let mut selected = None;
        for (i, (row, y)) in self.rows.iter().zip(body.top()..body.bottom()).enumerate() {
            if skip(i + 1) {
                continue;
            }
            let at = Rect {
                y,
                height: 1,
                ..body
            };
            if self.selected == Some(i) {
                set_style(buf, at, row.style);
                put_line(buf, at.x, y, &Line::raw(MARKER), marker, Style::default());
                draw_cells(buf, at, &row.cells, &columns);
                selected = Some(at);
            } else {
                draw_row(buf, at, row, &columns);
            }
        }
        if let Some(at) = selected {
            set_style(buf, at, self.highlight);
        }
    }
}

fn draw_row(buf: &mut Buffer, at: Rect, row: &Row, columns: &[Rect]) {
    if at.is_empty() {
        return;
    }
    set_style(buf, at, row.style);
    draw_cells(buf, at, &row.cells, columns);
}

fn draw_cells(buf: &mut Buffer, at: Rect, cells: &[Line<'static>], columns: &[Rect]) {
    for (line, column) in cells.iter().zip(columns) {
        let cell = Rect::new(at.x + column.x, at.y, column.width, 1).intersection(buf.area);
        render_line(buf, cell, line);
    }
}

#[cfg(test)]
mod tests;
