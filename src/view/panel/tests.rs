//! A panel leaves the same cells as ratatui's `Block` with all borders, the same border set and
//! merged borders: alone, side by side, over text, with titles that fit and titles cut, and in
//! areas too small for borders; on a cell set to a blank it draws its border, where `Block`
//! keeps the blank.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::symbols::border;
use ratatui::symbols::merge::MergeStrategy;
use ratatui::text::Line;
use ratatui::widgets::{Block, Padding, Widget};

use super::Panel;
use crate::view::theme::ASCII_BORDER as ASCII;

type Titles = Vec<(bool, Line<'static>)>;

fn both(
    set: border::Set<'static>,
    titles: &Titles,
    padding: Padding,
) -> (Panel<'static>, Block<'static>) {
    let mut panel = Panel::new(set).padding(padding);
    let mut block = Block::bordered()
        .border_set(set)
        .merge_borders(MergeStrategy::Exact)
        .padding(padding);
    for (top, line) in titles {
        if *top {
            panel = panel.title(line.clone());
            block = block.title(line.clone());
        } else {
            panel = panel.title_bottom(line.clone());
            block = block.title_bottom(line.clone());
        }
    }
    (panel, block)
}

/// Draws each area in turn on a buffer already holding text, with panels and with blocks.
fn compare(areas: &[Rect], titles: &Titles, padding: Padding) {
    let whole = Rect::new(0, 0, 30, 8);
    let start = || {
        let mut buf = Buffer::empty(whole);
        buf.set_string(0, 3, "text_under_the_borders_here", Style::new().red());
        buf
    };
    for set in [border::PLAIN, border::ROUNDED, border::DOUBLE, ASCII] {
        let (mut by_panel, mut by_block) = (start(), start());
        for area in areas {
            let (panel, block) = both(set, titles, padding);
            assert_eq!(panel.inner(*area), block.inner(*area), "inner of {area:?}");
            panel.render(*area, &mut by_panel);
            block.render(*area, &mut by_block);
        }
        assert_eq!(by_panel, by_block, "{set:?} {areas:?} {titles:?}");
    }
}

fn titles() -> Titles {
    vec![
        (true, Line::styled(" first ", Style::new().bold())),
        (true, Line::raw(" second ")),
        (
            true,
            Line::styled(" +3 more ", Style::new().cyan()).right_aligned(),
        ),
        (false, Line::raw(" foot ")),
        (false, Line::raw(" Esc closes ").right_aligned()),
    ]
}

#[test]
fn one_panel_with_titles_and_padding() {
    compare(&[Rect::new(1, 1, 28, 6)], &titles(), Padding::horizontal(1));
    compare(&[Rect::new(0, 0, 30, 8)], &Vec::new(), Padding::right(1));
}

#[test]
fn panels_sharing_borders_merge_as_blocks_do() {
    let areas = [
        Rect::new(0, 0, 30, 4),
        Rect::new(0, 3, 30, 5),
        Rect::new(0, 3, 16, 5),
        Rect::new(15, 3, 15, 5),
    ];
    compare(&areas, &titles(), Padding::ZERO);
}

#[test]
fn titles_too_wide_are_cut_as_blocks_cut_them() {
    for width in [3, 6, 9, 14, 20] {
        compare(&[Rect::new(2, 1, width, 5)], &titles(), Padding::ZERO);
    }
}

#[test]
fn areas_too_small_or_outside_the_buffer() {
    for area in [
        Rect::new(0, 0, 0, 0),
        Rect::new(0, 0, 1, 1),
        Rect::new(3, 2, 2, 1),
        Rect::new(3, 2, 1, 4),
        Rect::new(25, 5, 10, 6),
    ] {
        compare(&[area], &titles(), Padding::horizontal(1));
    }
}

#[test]
fn a_blank_cell_takes_the_border() {
    let mut buf = Buffer::empty(Rect::new(0, 0, 6, 3));
    buf.set_string(0, 1, "      ", Style::new());
    Panel::new(border::PLAIN).render(buf.area, &mut buf);
    assert_eq!(buf, Buffer::with_lines(["┌────┐", "│    │", "└────┘"]));
}

#[test]
fn a_border_symbol_merged_onto_itself_is_itself() {
    for set in [
        border::PLAIN,
        border::ROUNDED,
        border::DOUBLE,
        border::THICK,
        ASCII,
    ] {
        for symbol in [
            set.top_left,
            set.top_right,
            set.bottom_left,
            set.bottom_right,
            set.vertical_left,
            set.vertical_right,
            set.horizontal_top,
            set.horizontal_bottom,
        ] {
            let mut cell = ratatui::buffer::Cell::new(symbol);
            cell.merge_symbol(symbol, MergeStrategy::Exact);
            assert_eq!(cell.symbol(), symbol);
        }
    }
}
