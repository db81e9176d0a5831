//! The chart's plot, drawn cell for cell as ratatui's `Chart` draws it (the y labels left of an
//! axis line, the x labels below one, the legend boxed at the top left when it fits in 60 % of
//! the plot's width and 80 % of its height), with the datasets painted by `canvas.rs`.
//!
//! Why not `Chart` itself: its canvas allocates a grid and a layer for every dataset (one per
//! unbroken run of a series) and walks every cell of the plot for each, and it restyles the
//! whole area twice; that was a fifth of a frame's instructions (callgrind, a replay at
//! 120x40). The tests draw both and compare every cell.

mod canvas;
#[cfg(test)]
mod tests;

use std::hash::Hasher;

use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::{Color, Style};
use ratatui::symbols::{Marker, line};
use ratatui::text::Line;
use ratatui::widgets::{Block, GraphType, Widget};

use super::super::draw::{render_aligned, render_line, set_style};
use super::super::split;

/// One series to draw: its points, how, in what style, and its legend name.
pub struct Dataset<'a> {
    pub data: &'a [(f64, f64)],
    pub marker: Marker,
    pub kind: GraphType,
    pub style: Style,
    pub name: Option<String>,
}

/// Datasets over a time axis and a size axis, each with its labels (at least two each).
pub struct Plot<'a> {
    pub datasets: Vec<Dataset<'a>>,
    pub x_bounds: [f64; 2],
    pub y_bounds: [f64; 2],
    pub x_labels: Vec<Line<'a>>,
    pub y_labels: Vec<Line<'a>>,
}

/// The legend is hidden unless it fits in this much of the plot (percent of its width and
/// height).
const LEGEND_MAX: (u16, u16) = (60, 80);

/// Where `Chart::layout` puts the parts (no axis titles).
struct Parts {
    label_x: Option<u16>,
    label_y: Option<u16>,
    axis_x: Option<u16>,
    axis_y: Option<u16>,
    graph: Rect,
}

impl Plot<'_> {
    fn parts(&self, area: Rect) -> Parts {
        let mut x = area.left();
        let mut y = area.bottom() - 1;
        let mut label_x = None;
        if !self.x_labels.is_empty() && y > area.top() {
            label_x = Some(y);
            y -= 1;
        }
        let label_y = (!self.y_labels.is_empty()).then_some(x);
        x += self.left_of_y_axis(area);
        let mut axis_x = None;
        if !self.x_labels.is_empty() && y > area.top() {
            axis_x = Some(y);
            y -= 1;
        }
        let mut axis_y = None;
        if !self.y_labels.is_empty() && x + 1 < area.right() {
            axis_y = Some(x);
            x += 1;
        }
        let graph = Rect::new(
            x,
            area.top(),
            area.right().saturating_sub(x),
            y.saturating_sub(area.top()).saturating_add(1),
        );
        Parts {
            label_x,
            label_y,
            axis_x,
            axis_y,
            graph,
        }
    }

    /// The widest y label, or the part of the first x label (left-aligned) left of the axis.
    fn left_of_y_axis(&self, area: Rect) -> u16 {
        let widest = self.y_labels.iter().map(Line::width).max().unwrap_or(0) as u16;
        let first_x = self.x_labels.first().map_or(0, |l| {
            (l.width() as u16).saturating_sub(u16::from(!self.y_labels.is_empty()))
        });
        widest.max(first_x).min(area.width / 3)
    }

    fn legend_area(&self, graph: Rect) -> Option<Rect> {
        let names = self.datasets.iter().filter_map(|d| d.name.as_deref());
        let inner = names.clone().map(|n| Line::raw(n).width() as u16).max()?;
        let (width, height) = (inner + 2, names.count() as u16 + 2);
        let max_width = split::percent_of_width(graph, LEGEND_MAX.0);
        let max_height = split::percent_of_height(graph, LEGEND_MAX.1);
        (inner > 0
            && width <= max_width.width
            && height <= max_height.height
            && height <= graph.height)
            .then(|| Rect::new(graph.left(), graph.top(), width, height))
    }

    fn x_labels(&self, buf: &mut Buffer, y: u16, area: Rect, graph: Rect) {
        let labels = &self.x_labels;
        let n = labels.len() as u16;
        if n < 2 {
            return;
        }
        let between = graph.width / n;
        let first = Rect::new(area.left(), y, graph.left() - area.left(), 1);
        render_aligned(buf, first, &labels[0], Some(Alignment::Right));
        for (i, label) in labels[1..labels.len() - 1].iter().enumerate() {
            let x = graph.left() + (i + 1) as u16 * between + 1;
            let at = Rect::new(x, y, between.saturating_sub(1), 1);
            render_aligned(buf, at, label, Some(Alignment::Center));
        }
        let at = Rect::new(graph.right() - between, y, between, 1);
        render_aligned(buf, at, &labels[labels.len() - 1], Some(Alignment::Right));
    }

    fn y_labels(&self, buf: &mut Buffer, x: u16, area: Rect, graph: Rect) {
        let labels = &self.y_labels;
        let n = labels.len() as u16;
        if n < 2 {
            return;
        }
        for (i, label) in labels.iter().enumerate() {
            let dy = i as u16 * (graph.height - 1) / (n - 1);
            if dy < graph.bottom() {
                let at = Rect::new(
                    x,
                    graph.bottom().saturating_sub(1) - dy,
                    (graph.left() - area.left()).saturating_sub(1),
                    1,
                );
                render_aligned(buf, at, label, Some(Alignment::Left));
            }
        }
    }
}

impl Widget for Plot<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        self.draw(area, buf, |_, _| false);
    }
}

impl Plot<'_> {
    /// Draws the plot into `area` as `render` does, a row at a time: each row is offered to
    /// `keep` with a hash of what decides its cells (the area and its style before, the labels,
    /// the legend where it lies on the row, each dataset's cells in the row), and a row `keep`
    /// answers true for (its cells are there already, what `Stamps` asks of a region) is not
    /// painted. Returns whether any row was drawn.
    pub fn draw(
        self,
        area: Rect,
        buf: &mut Buffer,
        mut keep: impl FnMut(Rect, u64) -> bool,
    ) -> bool {
        let area = area.intersection(buf.area);
        if area.is_empty() {
            return true;
        }
        let parts = self.parts(area);
        let graph = parts.graph;
        // The legend box takes the style the area had before anything was drawn.
        let original = buf[(area.left(), area.top())].style();
        let layers: Vec<canvas::Layer> = if graph.is_empty() {
            Vec::new()
        } else {
            let mut canvas = canvas::Canvas::new(graph, self.x_bounds, self.y_bounds);
            self.datasets.iter().map(|d| canvas.draw(d)).collect()
        };
        let legend = self.legend_area(graph);
        let every_row = crate::paint::hash(&(area, original, &self.x_labels, &self.y_labels));
        let legend_rows = legend.map(|at| {
            let names: Vec<_> = self.datasets.iter().map(|d| (&d.name, d.style)).collect();
            (at, crate::paint::hash(&(at, names)))
        });
        let mut rows: Vec<_> = (area.top()..area.bottom())
            .map(|y| {
                let mut h = crate::paint::hasher();
                h.write_u64(every_row);
                if let Some((at, names)) = legend_rows
                    && (at.top()..at.bottom()).contains(&y)
                {
                    h.write_u64(names);
                }
                h
            })
            .collect();
        let first_graph_row = usize::from(graph.y - area.y);
        for layer in &layers {
            layer.hash_rows(&mut rows[first_graph_row..]);
        }
        let kept: Vec<bool> = rows
            .into_iter()
            .zip(area.top()..)
            .map(|(h, y)| {
                keep(
                    Rect {
                        y,
                        height: 1,
                        ..area
                    },
                    h.finish(),
                )
            })
            .collect();
        if kept.iter().all(|&k| k) {
            return false;
        }
        // Labels, axes and the legend are drawn whole (a kept row's cells are put back over
        // them); the datasets only on the rows not kept.
        if let Some(y) = parts.label_x {
            self.x_labels(buf, y, area, graph);
        }
        if let Some(x) = parts.label_y {
            self.y_labels(buf, x, area, graph);
        }
        if let Some(y) = parts.axis_x {
            for x in graph.left()..graph.right() {
                buf[(x, y)].set_symbol(line::HORIZONTAL);
            }
        }
        if let Some(x) = parts.axis_y {
            for y in graph.top()..graph.bottom() {
                buf[(x, y)].set_symbol(line::VERTICAL);
            }
        }
        if let (Some(x), Some(y)) = (parts.axis_y, parts.axis_x) {
            buf[(x, y)].set_symbol(line::BOTTOM_LEFT);
        }
        if !graph.is_empty() {
            let skip = &kept[first_graph_row..];
            // The canvas's background, reset over the plot.
            let width = usize::from(buf.area.width);
            for (y, _) in (graph.top()..graph.bottom())
                .zip(skip)
                .filter(|(_, k)| !**k)
            {
                let start = usize::from(y - buf.area.y) * width + usize::from(graph.x - buf.area.x);
                for cell in &mut buf.content[start..start + usize::from(graph.width)] {
                    cell.bg = Color::Reset;
                }
            }
            for layer in &layers {
                layer.set(buf, skip);
            }
        }
        if let Some(legend) = legend {
            set_style(buf, legend, original);
            Block::bordered().render(legend, buf);
            let names = self
                .datasets
                .iter()
                .filter_map(|d| Some((d.name.as_deref()?, d.style)));
            for (i, (name, style)) in names.enumerate() {
                let at = Rect::new(legend.x + 1, legend.y + 1 + i as u16, legend.width - 2, 1);
                render_line(buf, at, &Line::raw(name).patch_style(style));
            }
        }
        true
    }
}
