//! The plot's datasets painted as ratatui's `Canvas` paints them for a `Chart`: each data point
//! mapped to a dot of the marker's grid (2x4 a cell for braille, 1x1 otherwise), a line or a
//! filled area between consecutive points (the same clipping and the same Bresenham steps),
//! and each dataset a layer over the ones before. The difference is the bookkeeping: one grid
//! reused by every dataset, and only its painted cells set into the buffer, where the canvas
//! allocates a grid and a layer per dataset and walks every cell of the plot for each.

use std::hash::Hasher;

use line_clipping::{LineSegment, Point, Window, cohen_sutherland};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Color;
use ratatui::symbols::Marker;
use ratatui::symbols::braille::BRAILLE;
use ratatui::widgets::GraphType;

use super::Dataset;

/// A grid of dots over the plot's cells, painted a dataset at a time.
pub struct Canvas {
    area: Rect,
    x_bounds: [f64; 2],
    y_bounds: [f64; 2],
    /// A cell's dots (braille: bit `x % 2 + 2 * (y % 4)`; other markers: 1 when painted).
    dots: Vec<u8>,
    /// The cells painted by the dataset being drawn, each once.
    painted: Vec<Painted>,
}

/// A painted cell's place in the grid.
#[derive(Clone, Copy)]
pub struct Painted {
    row: u32,
    column: u32,
}

/// How one dataset's marker maps dots to cells.
#[derive(Clone, Copy)]
struct Grid {
    /// Dots a cell across and down.
    w: usize,
    h: usize,
    /// Columns of cells.
    width: usize,
    /// Resolution in dots.
    res: (f64, f64),
}

impl Canvas {
    pub fn new(area: Rect, x_bounds: [f64; 2], y_bounds: [f64; 2]) -> Self {
        let cells = usize::from(area.width) * usize::from(area.height);
        Canvas {
            area,
            x_bounds,
            y_bounds,
            dots: vec![0; cells],
            // Room for every cell: the vector is not grown while a dataset is painted.
            painted: Vec::with_capacity(cells),
        }
    }

    /// Paints `d`: the cells it sets, as a layer over the datasets before.
    pub fn draw(&mut self, d: &Dataset<'_>) -> Layer {
        let (w, h) = match d.marker {
            Marker::Braille => (2, 4),
            _ => (1, 1),
        };
        let width = usize::from(self.area.width);
        let grid = Grid {
            w,
            h,
            width,
            res: (
                f64::from(self.area.width) * w as f64,
                f64::from(self.area.height) * h as f64,
            ),
        };
        for &(x, y) in d.data {
            if let Some((x, y)) = self.point(grid, x, y) {
                self.paint(grid, x, y);
            }
        }
        let fill_to = match d.kind {
            GraphType::Line => None,
            GraphType::Area => Some(0.0),
            GraphType::Bar => {
                for &(x, y) in d.data {
                    self.line(grid, x, 0.0, x, y, None);
                }
                return self.layer(d);
            }
            _ => return self.layer(d),
        };
        for pair in d.data.windows(2) {
            let ((x1, y1), (x2, y2)) = (pair[0], pair[1]);
            self.line(grid, x1, y1, x2, y2, fill_to);
        }
        self.layer(d)
    }

    /// `Painter::get_point`: the dot a point falls on, `None` outside the bounds.
    fn point(&self, g: Grid, x: f64, y: f64) -> Option<(usize, usize)> {
        let [left, right] = self.x_bounds;
        let [bottom, top] = self.y_bounds;
        if x < left || x > right || y < bottom || y > top {
            return None;
        }
        let width = right - left;
        let height = top - bottom;
        if width <= 0.0 || height <= 0.0 {
            return None;
        }
        let x = ((x - left) * (g.res.0 - 1.0) / width).round() as usize;
        let y = ((top - y) * (g.res.1 - 1.0) / height).round() as usize;
        Some((x, y))
    }

    #[inline]
    fn paint(&mut self, g: Grid, x: usize, y: usize) {
        let bits = if g.w == 1 {
            1
        } else {
            1u8 << ((x % g.w) + g.w * (y % g.h))
        };
        self.mark(g, y / g.h, x / g.w, bits);
    }

    /// Adds `bits` to the dots of the cell at `row`, `column` (none outside the grid).
    #[inline]
    fn mark(&mut self, g: Grid, row: usize, column: usize, bits: u8) -> bool {
        let Some(cell) = self.dots.get_mut(row * g.width + column) else {
            return false;
        };
        if *cell == 0 {
            self.painted.push(Painted {
                row: row as u32,
                column: column as u32,
            });
        }
        *cell |= bits;
        true
    }

    /// The dots from `top` down to `bottom` in column `x`, as `paint` paints them one by one:
    /// a cell's rows at once.
    fn paint_column(&mut self, g: Grid, x: usize, top: usize, bottom: usize) {
        if g.h == 1 {
            for y in top..=bottom {
                if !self.mark(g, y, x, 1) {
                    return;
                }
            }
            return;
        }
        // Braille: four dot rows a cell, the column's bit of each.
        let (column, side) = (x / 2, x % 2);
        let (first_row, last_row) = (top / 4, bottom / 4);
        for row in first_row..=last_row {
            let first = if row == first_row { top % 4 } else { 0 };
            let last = if row == last_row { bottom % 4 } else { 3 };
            if !self.mark(g, row, column, rows_mask(side, first, last)) {
                return;
            }
        }
    }

    /// A canvas `Line` (`fill_to`: `None`) or `FilledLine` (down or up to `fill_to`).
    fn line(&mut self, g: Grid, x1: f64, y1: f64, x2: f64, y2: f64, fill_to: Option<f64>) {
        let [xmin, xmax] = self.x_bounds;
        let [ymin, ymax] = self.y_bounds;
        let Some(LineSegment { p1, p2 }) = cohen_sutherland::clip_line(
            LineSegment::new(Point::new(x1, y1), Point::new(x2, y2)),
            Window::new(xmin, xmax, ymin, ymax),
        ) else {
            return;
        };
        let Some((x1, y1)) = self.point(g, p1.x, p1.y) else {
            return;
        };
        let Some((x2, y2)) = self.point(g, p2.x, p2.y) else {
            return;
        };
        let Some(fill_to) = fill_to else {
            for_each_line_point(x1, y1, x2, y2, |x, y| self.paint(g, x, y));
            return;
        };
        let Some((_, y_fill)) = self.point(g, p1.x, fill_to.clamp(ymin, ymax)) else {
            return;
        };
        for_each_line_point(x1, y1, x2, y2, |x, y| {
            self.paint_column(g, x, y.min(y_fill), y.max(y_fill));
        });
    }

    /// The painted cells, with their dots, as a layer; the grid is left blank for the next
    /// dataset.
    fn layer(&mut self, d: &Dataset<'_>) -> Layer {
        let width = usize::from(self.area.width);
        let cells = self
            .painted
            .drain(..)
            .map(|p| {
                let index = p.row as usize * width + p.column as usize;
                (p, std::mem::take(&mut self.dots[index]))
            })
            .collect();
        Layer {
            marker: d.marker,
            color: d.style.fg.unwrap_or(Color::Reset),
            area: self.area,
            cells,
        }
    }
}

/// A dataset's painted cells: each one's place in the plot and its dots.
pub struct Layer {
    marker: Marker,
    color: Color,
    area: Rect,
    cells: Vec<(Painted, u8)>,
}

impl Layer {
    /// Adds what this layer paints in each row of the plot to that row's hasher (`rows`, from
    /// the plot's top): its marker and colour, and each cell's place and dots.
    pub fn hash_rows<H: Hasher>(&self, rows: &mut [H]) {
        let look = crate::paint::hash(&(self.marker, self.color));
        for h in rows.iter_mut() {
            h.write_u64(look);
        }
        for &(Painted { row, column }, dots) in &self.cells {
            if let Some(h) = rows.get_mut(row as usize) {
                h.write_u32(column);
                h.write_u8(dots);
            }
        }
    }

    /// The cells into `buf` as a canvas layer sets them (symbol and foreground, and the
    /// background for blocks), but for the rows of the plot `skip` marks; the plot's area must
    /// lie inside `buf`.
    pub fn set(&self, buf: &mut Buffer, skip: &[bool]) {
        let buf_width = usize::from(buf.area.width);
        let origin = usize::from(self.area.y - buf.area.y) * buf_width
            + usize::from(self.area.x - buf.area.x);
        for &(Painted { row, column }, dots) in &self.cells {
            if skip.get(row as usize) == Some(&true) {
                continue;
            }
            let symbol = match self.marker {
                Marker::Braille => BRAILLE[usize::from(dots)],
                Marker::Block => '█',
                Marker::Bar => '▄',
                _ => '•',
            };
            let cell = &mut buf.content[origin + row as usize * buf_width + column as usize];
            cell.set_char(symbol).set_fg(self.color);
            if matches!(self.marker, Marker::Block) {
                cell.set_bg(self.color);
            }
        }
    }
}

/// The braille dots of column `column` (0 or 1) from row `first` to `last` of a cell (0 to 3):
/// bits `column + 2 * row`, as `paint` sets them one by one.
#[inline]
fn rows_mask(column: usize, first: usize, last: usize) -> u8 {
    // Bits 2 * first to 2 * last + 1, and of those the column's.
    let span = ((1u16 << (2 * last + 2)) - 1) & !((1u16 << (2 * first)) - 1);
    (span as u8) & (0x55 << column)
}

/// The dots of a line from (`x1`, `y1`) to (`x2`, `y2`), ratatui's Bresenham steps exactly:
/// along x where the line is flatter than 45°, along y otherwise (a vertical or horizontal line
/// and a single dot included).
fn for_each_line_point(
    x1: usize,
    y1: usize,
    x2: usize,
    y2: usize,
    mut f: impl FnMut(usize, usize),
) {
    if y2.abs_diff(y1) < x2.abs_diff(x1) {
        steps((x1, y1), (x2, y2), &mut f);
    } else {
        steps((y1, x1), (y2, x2), |y, x| f(x, y));
    }
}

/// Bresenham's steps along the major axis `a` from the lower end, `b` following: ratatui's
/// `for_each_line_point_low` and `_high`, which differ only in which axis is which.
fn steps(p: (usize, usize), q: (usize, usize), mut f: impl FnMut(usize, usize)) {
    let ((a1, b1), (a2, b2)) = if p.0 > q.0 { (q, p) } else { (p, q) };
    let da = (a2 - a1) as isize;
    let db = (b2 as isize - b1 as isize).abs();
    let mut d = 2 * db - da;
    let mut b = b1;
    for a in a1..=a2 {
        f(a, b);
        if d > 0 {
            b = if b1 > b2 { b.saturating_sub(1) } else { b + 1 };
            d -= 2 * da;
        }
        d += 2 * db;
    }
}

#[cfg(test)]
mod tests {
    /// A cell's rows at once are the dots one by one.
    #[test]
    fn rows_mask_is_the_dots_one_by_one() {
        for column in 0..2 {
            for first in 0..4 {
                for last in first..4 {
                    let dots = (first..=last).fold(0u8, |m, y| m | 1 << (column + 2 * y));
                    assert_eq!(super::rows_mask(column, first, last), dots);
                }
            }
        }
    }
}
