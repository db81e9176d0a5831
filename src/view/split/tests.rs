//! Each split against `Layout` at every size up to a few hundred cells.

use ratatui::layout::{Constraint, Flex, Layout, Rect};

use super::{first_row, percent_of_height, percent_of_width, row};

#[test]
fn percentages_are_layouts_at_every_size() {
    for size in 0..=600u16 {
        let area = Rect::new(3, 2, size, size);
        for percent in [0, 1, 33, 50, 60, 80, 99, 100] {
            let [w] = Layout::horizontal([Constraint::Percentage(percent)])
                .flex(Flex::Start)
                .areas(area);
            assert_eq!(percent_of_width(area, percent), w, "{size} {percent}%");
            let [h] = Layout::vertical([Constraint::Percentage(percent)])
                .flex(Flex::Start)
                .areas(area);
            assert_eq!(percent_of_height(area, percent), h, "{size} {percent}%");
        }
    }
}

#[test]
fn rows_are_layouts_at_every_width() {
    use Constraint::{Fill, Length};
    let sets: [&[Constraint]; 5] = [
        &[Length(2), Fill(0)],
        &[Length(3), Length(7), Length(5), Fill(1)],
        &[Length(4), Fill(1), Length(4), Length(4)],
        &[Length(6), Length(6)],
        &[Fill(1)],
    ];
    for widths in sets {
        for spacing in [0, 1] {
            for width in 0..=200u16 {
                let area = Rect::new(5, 1, width, 1);
                let layout = Layout::horizontal(widths.iter().copied())
                    .flex(Flex::Start)
                    .spacing(spacing)
                    .split(area);
                assert_eq!(
                    row(area, widths, spacing),
                    layout.to_vec(),
                    "{widths:?} {width}"
                );
            }
        }
    }
}

#[test]
fn the_marker_column_and_the_rest_are_the_grids_layout_at_every_width() {
    use Constraint::{Fill, Length};
    for width in 0..=200u16 {
        let area = Rect::new(0, 0, width, 1);
        let [_, rest] = Layout::horizontal([Length(2), Fill(0)]).areas(area);
        assert_eq!(row(area, &[Length(2), Fill(0)], 0)[1], rest, "{width}");
    }
}

#[test]
fn the_first_row_and_the_rest_are_layouts_at_every_height() {
    for height in 0..=100u16 {
        let area = Rect::new(1, 4, 30, height);
        let layout: [Rect; 2] =
            Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(area);
        assert_eq!(first_row(area), layout, "{height}");
    }
}
