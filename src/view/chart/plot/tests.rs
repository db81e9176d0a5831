//! The plot against ratatui's `Chart` with the same datasets, axes and legend: every cell.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, GraphType, LegendPosition, Widget};

use proptest::prelude::*;

use super::{Dataset, Plot};

/// Points over x in [-span, 0] (600 s) and y in [0, top] (140), a walk that starts before the
/// span and strays below and above the bounds.
fn series() -> impl Strategy<Value = Vec<(f64, f64)>> {
    let (span, top) = (600.0, 140.0);
    let steps = prop::collection::vec((0.0..1.0f64, -0.5..0.5f64), 0..40);
    (0.0..1.0f64, 0.0..1.0f64, steps).prop_map(move |(x0, y0, steps)| {
        let mut x = -span * (1.0 + 0.2 * x0);
        let mut y = top * y0;
        steps
            .into_iter()
            .map(|(dx, dy)| {
                x += span / 15.0 * dx;
                y = (y + top * dy * 0.4).max(-0.1 * top);
                (x, y.min(top * 1.2))
            })
            .collect()
    })
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

const KINDS: [[(Marker, GraphType); 2]; 3] = [
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

proptest! {
    #[test]
    fn the_plot_is_ratatuis_chart_cell_for_cell(
        data in prop::collection::vec(series(), 0..6),
        (x, y, width, height) in (0..3u16, 0..2u16, 4..114u16, 3..33u16),
        kinds in prop::sample::select(KINDS.to_vec()),
        names: bool,
    ) {
        both(Rect::new(x, y, width, height), &data, &kinds, names);
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
