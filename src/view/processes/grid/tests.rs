//! The grid against ratatui's `Table` with the same header, rows, widths, marker and highlight:
//! every cell, at sizes from a single row to wider than the columns.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, HighlightSpacing, StatefulWidget, Table, TableState};

use super::{Grid, MARKER, Row};

const TEXTS: &[&str] = &[
    "",
    "1.4G",
    "n/a",
    "python3 train.py --lr 0.1",
    "日本語 wide",
    "über",
    "tab\there",
    "a line much wider than any column here",
    "⣿⣿ bars █▓▒",
];

fn line(i: usize) -> Line<'static> {
    let text = TEXTS[i % TEXTS.len()];
    match i % 4 {
        0 => Line::raw(text),
        1 => Line::raw(text).right_aligned(),
        2 => Line::styled(text, Style::new().fg(Color::Red)).centered(),
        _ => Line::from(vec![
            Span::styled(text, Style::new().add_modifier(Modifier::BOLD)),
            Span::raw(" x"),
        ])
        .right_aligned(),
    }
}

fn both(area: Rect, rows: usize, selected: Option<usize>, seed: usize) {
    let widths = [
        Constraint::Length(3),
        Constraint::Length(7),
        Constraint::Length(5),
        Constraint::Fill(1),
    ];
    let header = || (0..4).map(|c| line(c * 3 + 1)).collect::<Vec<_>>();
    let row_style = |r: usize| match r % 3 {
        0 => Style::new(),
        1 => Style::new().add_modifier(Modifier::DIM),
        _ => Style::new().fg(Color::Cyan),
    };
    let cells = |r: usize| (0..4).map(|c| line(seed + r * 5 + c)).collect::<Vec<_>>();
    let highlight = Style::new().bg(Color::DarkGray);
    let screen = Rect::new(0, 0, area.right() + 1, area.bottom() + 1);
    let mut ours = Buffer::empty(screen);
    let grid_rows: Vec<Row> = (0..rows)
        .map(|r| Row {
            cells: cells(r),
            style: row_style(r),
        })
        .collect();
    Grid {
        header: Row {
            cells: header(),
            style: Style::new().fg(Color::Yellow),
        },
        rows: &grid_rows,
        widths: &widths,
        selected,
        highlight,
        skip: &[],
    }
    .render(area, &mut ours);
    let mut theirs = Buffer::empty(screen);
    let table = Table::new(
        (0..rows).map(|r| {
            ratatui::widgets::Row::new(cells(r).into_iter().map(Cell::from)).style(row_style(r))
        }),
        widths,
    )
    .header(
        ratatui::widgets::Row::new(header().into_iter().map(Cell::from))
            .style(Style::new().fg(Color::Yellow)),
    )
    .row_highlight_style(highlight)
    .highlight_symbol(MARKER)
    .highlight_spacing(HighlightSpacing::Always);
    StatefulWidget::render(
        &table,
        area,
        &mut theirs,
        &mut TableState::new().with_selected(selected),
    );
    assert_eq!(
        ours, theirs,
        "{area:?}, {rows} rows, selected {selected:?}, seed {seed}"
    );
}

#[test]
fn the_grid_is_ratatuis_table_cell_for_cell() {
    for seed in 0..12 {
        for (w, h) in [(80, 8), (40, 5), (25, 3), (12, 2), (90, 1), (3, 4)] {
            let area = Rect::new(seed as u16 % 3, 1, w, h);
            let rows = usize::from(h.saturating_sub(1));
            both(area, rows, None, seed);
            for s in 0..rows {
                both(area, rows, Some(s), seed);
            }
        }
    }
}
