//! The plot against ratatui's `Chart` with the same datasets, axes and legend: every cell.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, GraphType, LegendPosition, Widget};

use super::{Dataset, Plot};

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn unit(&mut self) -> f64 {
        (self.next() % 10_000) as f64 / 10_000.0
    }
}

/// Points over x in [-span, 0], some outside the bounds, some in gaps.
fn series(rng: &mut Rng, span: f64, top: f64) -> Vec<(f64, f64)> {
    let n = (rng.next() % 40) as usize;
    let mut x = -span * (1.0 + 0.2 * rng.unit());
    let mut y = top * rng.unit();
    (0..n)
        .map(|_| {
            x += span / 30.0 * rng.unit() * 2.0;
            y = (y + top * (rng.unit() - 0.5) * 0.4).max(-0.1 * top);
            (x, y.min(top * 1.2))
        })
        .collect()
}

fn both(area: Rect, data: &[Vec<(f64, f64)>], kinds: &[(Marker, GraphType)], names: bool) {
    let (span, top) = (600.0, 140.0);
    let styles = [Color::Red, Color::Green, Color::Blue, Color::Yellow];
    let x_labels = ["-10m", "-5m", "now"];
    let y_labels = ["0", "70G", "140G"];
    let name = |i: usize| (names && i.is_multiple_of(2)).then(|| format!("series {i:<3}"));
    let ours = Plot {
        datasets: data
            .iter()
            .enumerate()
            .map(|(i, d)| Dataset {
                data: d,
                marker: kinds[i % kinds.len()].0,
                kind: kinds[i % kinds.len()].1,
                style: Style::default().fg(styles[i % 4]),
                name: name(i),
            })
            .collect(),
        x_bounds: [-span, 0.0],
        y_bounds: [0.0, top],
        x_labels: x_labels.iter().map(|l| Line::raw(*l)).collect(),
        y_labels: y_labels.iter().map(|l| Line::raw(*l)).collect(),
    };
    let theirs = Chart::new(
        data.iter()
            .enumerate()
            .map(|(i, d)| {
                let set = ratatui::widgets::Dataset::default()
                    .data(d)
                    .marker(kinds[i % kinds.len()].0)
                    .graph_type(kinds[i % kinds.len()].1)
                    .style(Style::default().fg(styles[i % 4]));
                match name(i) {
                    Some(n) => set.name(n),
                    None => set,
                }
            })
            .collect(),
    )
    .x_axis(
        Axis::default()
            .bounds([-span, 0.0])
            .labels(x_labels.map(Span::raw)),
    )
    .y_axis(
        Axis::default()
            .bounds([0.0, top])
            .labels(y_labels.map(Span::raw)),
    )
    .legend_position(Some(LegendPosition::TopLeft))
    .hidden_legend_constraints((Constraint::Percentage(60), Constraint::Percentage(80)));
    let screen = Rect::new(0, 0, area.right() + 2, area.bottom() + 1);
    let (mut a, mut b) = (Buffer::empty(screen), Buffer::empty(screen));
    ours.render(area, &mut a);
    theirs.render(area, &mut b);
    assert_eq!(a, b, "{area:?} {kinds:?}");
}

#[test]
fn the_plot_is_ratatuis_chart_cell_for_cell() {
    let kinds = [
        [
            (Marker::Braille, GraphType::Line),
            (Marker::Braille, GraphType::Area),
        ],
        [
            (Marker::Dot, GraphType::Line),
            (Marker::Block, GraphType::Area),
        ],
        [
            (Marker::Bar, GraphType::Area),
            (Marker::Braille, GraphType::Bar),
        ],
    ];
    for seed in 1..120u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let data: Vec<_> = (0..(seed % 6))
            .map(|_| series(&mut rng, 600.0, 140.0))
            .collect();
        let area = Rect::new(
            (seed % 3) as u16,
            (seed % 2) as u16,
            4 + (seed * 7 % 110) as u16,
            3 + (seed * 5 % 30) as u16,
        );
        both(area, &data, &kinds[(seed % 3) as usize], seed % 4 != 0);
    }
}

#[test]
fn a_flat_line_at_the_top_and_at_zero_and_an_empty_series_draw_as_in_chart() {
    let flat = vec![(-600.0, 140.0), (0.0, 140.0)];
    let zero = vec![(-600.0, 0.0), (0.0, 0.0)];
    let vertical = vec![(-300.0, 0.0), (-300.0, 140.0)];
    let area = Rect::new(1, 1, 80, 16);
    let kinds = [(Marker::Braille, GraphType::Line)];
    both(area, &[flat, zero, vertical, Vec::new()], &kinds, true);
}
