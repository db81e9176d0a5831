//! The painter's updates against ratatui's own diff, cell for cell, and its frames on a
//! `TestBackend` against what was rendered.
#![allow(deprecated)] // `Cell::skip`

use std::num::NonZeroU16;

use proptest::prelude::*;
use ratatui::backend::TestBackend;
use ratatui::buffer::{Buffer, Cell, CellDiffOption, CellWidth};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};
use ratatui::{Terminal, TerminalOptions, Viewport};

use super::diff::narrow;
use super::{Changes, Painter, Stamps};

const SYMBOLS: &[&str] = &[
    " ", " ", " ", "a", "a", "b", "│", "─", "┼", "█", "▒", "▇", "⣿", "⠒", "⡀", "コ", "漢", "❤️",
    "é", "ﾞ",
];

/// A cell of any of `SYMBOLS` and styles; one in ten skipped, always updated, forced wide or
/// marked `skip`.
fn cell() -> impl Strategy<Value = Cell> {
    let fg = prop::sample::select(vec![Color::Reset, Color::Red, Color::Rgb(1, 2, 3)]);
    let bg = prop::sample::select(vec![Color::Reset, Color::Reset, Color::Blue]);
    let modifier =
        prop::sample::select(vec![Modifier::empty(), Modifier::BOLD, Modifier::REVERSED]);
    (prop::sample::select(SYMBOLS), fg, bg, modifier, 0..40u8).prop_map(
        |(symbol, fg, bg, modifier, odd)| {
            let mut cell = Cell::new(symbol);
            cell.fg = fg;
            cell.bg = bg;
            cell.modifier = modifier;
            match odd {
                0 => cell.diff_option = CellDiffOption::Skip,
                1 => cell.diff_option = CellDiffOption::AlwaysUpdate,
                2 => cell.diff_option = CellDiffOption::ForcedWidth(NonZeroU16::new(2).unwrap()),
                3 => cell.skip = true,
                _ => {}
            }
            cell
        },
    )
}

/// Two consecutive frames: `next` is `prev` with about a third of its cells changed.
fn frames() -> impl Strategy<Value = (Buffer, Buffer)> {
    (0..3u16, 0..2u16, 1..14u16, 1..6u16).prop_flat_map(|(x, y, width, height)| {
        let cells = usize::from(width) * usize::from(height);
        let changes = prop::collection::vec(prop::option::weighted(0.33, cell()), cells);
        (prop::collection::vec(cell(), cells), changes).prop_map(move |(cells, changes)| {
            let area = Rect::new(x, y, width, height);
            let mut prev = Buffer::empty(area);
            prev.content = cells;
            let mut next = prev.clone();
            for (cell, change) in next.content.iter_mut().zip(changes) {
                if let Some(change) = change {
                    *cell = change;
                }
            }
            // ratatui's diff indexes past the end for a wide character in the last cell (ours
            // stops there); ratatui's own text never puts one there.
            for buf in [&mut prev, &mut next] {
                if let Some(last) = buf.content.last_mut()
                    && last.cell_width() > 1
                {
                    *last = Cell::new("x");
                }
            }
            (prev, next)
        })
    })
}

fn updates<'a>(it: impl Iterator<Item = (u16, u16, &'a Cell)>) -> Vec<(u16, u16, Cell)> {
    it.map(|(x, y, c)| (x, y, c.clone())).collect()
}

proptest! {
    #[test]
    fn the_updates_are_ratatuis_for_any_two_frames((prev, next) in frames()) {
        prop_assert_eq!(updates(Changes::new(&prev, &next)), updates(prev.diff_iter(&next)));
        // A frame against an empty screen (the first, or after a clear) and against itself.
        let empty = Buffer::empty(prev.area);
        prop_assert_eq!(updates(Changes::new(&empty, &next)), updates(empty.diff_iter(&next)));
        prop_assert_eq!(updates(Changes::new(&next, &next)), updates(next.diff_iter(&next)));
    }

    #[test]
    fn a_shorter_next_frame_is_compared_as_far_as_both_go(
        (mut prev, mut next) in frames(),
        rows in 1..6u16,
    ) {
        next.area.height = rows.min(next.area.height);
        let cells = next.area.area() as usize;
        next.content.truncate(cells);
        // No wide character in the last cell both are compared over (see `frames`).
        for cell in [&mut prev.content[cells - 1], &mut next.content[cells - 1]] {
            if cell.cell_width() > 1 {
                *cell = Cell::new("x");
            }
        }
        prop_assert_eq!(updates(Changes::new(&prev, &next)), updates(prev.diff_iter(&next)));
    }
}

#[test]
fn the_symbols_taken_as_one_column_are_one_column() {
    let ranges = ['\u{2500}'..='\u{25BF}', '\u{2800}'..='\u{28FF}'];
    for c in ranges.into_iter().flatten() {
        let s = c.to_string();
        assert!(narrow(s.as_bytes()), "{c:?}");
        assert_eq!(s.as_str().cell_width(), 1, "{c:?}");
    }
    for s in ["\u{25C0}", "\u{25FD}", "コ", "❤️", "é", "\u{2900}", "ab"] {
        assert!(!narrow(s.as_bytes()), "{s:?}");
    }
}

fn terminal(width: u16, height: u16) -> Terminal<TestBackend> {
    let viewport = Viewport::Fixed(Rect::new(0, 0, width, height));
    Terminal::with_options(
        TestBackend::new(width, height),
        TerminalOptions { viewport },
    )
    .unwrap()
}

fn write(buf: &mut Buffer, text: &str) {
    buf.set_string(0, 0, text, ratatui::style::Style::default());
}

/// A frame that writes `text` and stamps nothing.
fn unstamped(text: &str) -> impl FnOnce(&mut ratatui::Frame, &Stamps) -> Stamps + '_ {
    move |f, _| {
        write(f.buffer_mut(), text);
        Stamps::default()
    }
}

#[test]
fn the_terminal_shows_what_ratatuis_draw_would_show() {
    let mut term = terminal(8, 2);
    let mut theirs = terminal(8, 2);
    let mut painter = Painter::default();
    for text in ["hello", "help", "⣿コa", "", "❤️ bye", "bye"] {
        painter.draw(&mut term, unstamped(text)).unwrap();
        theirs.draw(|f| write(f.buffer_mut(), text)).unwrap();
        assert_eq!(term.backend().buffer(), theirs.backend().buffer(), "{text}");
    }
}

#[test]
fn a_resize_or_a_clear_writes_the_whole_frame_again() {
    let mut term = terminal(8, 2);
    let mut painter = Painter::default();
    painter.draw(&mut term, unstamped("same")).unwrap();
    term.backend_mut().resize(10, 3);
    term.resize(Rect::new(0, 0, 10, 3)).unwrap();
    painter.draw(&mut term, unstamped("same")).unwrap();
    let mut want = Buffer::empty(Rect::new(0, 0, 10, 3));
    write(&mut want, "same");
    term.backend().assert_buffer(&want);

    term.clear().unwrap();
    painter.invalidate();
    painter.draw(&mut term, unstamped("same")).unwrap();
    term.backend().assert_buffer(&want);
}

#[test]
fn the_terminals_spare_buffer_is_kept_empty_so_two_buffers_are_held_as_ratatui_holds() {
    let mut term = terminal(8, 2);
    let mut painter = Painter::default();
    for _ in 0..2 {
        painter.draw(&mut term, unstamped("x")).unwrap();
        term.swap_buffers();
        assert!(term.current_buffer_mut().content.is_empty());
        term.swap_buffers();
    }
    // A resize sizes it again; the next frame empties it.
    term.backend_mut().resize(10, 3);
    term.resize(Rect::new(0, 0, 10, 3)).unwrap();
    painter.invalidate();
    painter.draw(&mut term, unstamped("x")).unwrap();
    term.swap_buffers();
    assert!(term.current_buffer_mut().content.is_empty());
}

proptest! {
    /// Cells kept (the same in both frames, as a stamp promises) change no update: the updates
    /// are those of the whole frames, whatever the new frame's buffer holds there (the painter
    /// does not move the kept cells into it). (Save a kept cell marked to be written always,
    /// which is not written again: gpumon draws none.)
    #[test]
    fn kept_cells_that_are_the_same_change_nothing(
        (mut prev, mut next) in frames(),
        (x, y, w, h) in (0..14u16, 0..6u16, 0..14u16, 0..6u16),
        left in prop::collection::vec(cell(), 14 * 6),
    ) {
        let area = prev.area;
        let rect = Rect::new(area.x + x, area.y + y, w, h).intersection(area);
        for p in rect.positions() {
            if prev[p].diff_option == CellDiffOption::AlwaysUpdate {
                prev[p].diff_option = CellDiffOption::None;
            }
            next[p] = prev[p].clone();
        }
        let (mut before, mut stamps) = (Stamps::default(), Stamps::default());
        before.stamp(&Stamps::default(), rect, 7);
        prop_assert_eq!(stamps.stamp(&before, rect, 7), !rect.is_empty());
        let mut kept = Vec::new();
        stamps.kept(area, &mut kept);
        let cells: usize = kept.iter().map(ExactSizeIterator::len).sum();
        prop_assert_eq!(cells, usize::from(rect.width) * usize::from(rect.height));
        prop_assert!(kept.windows(2).all(|w| w[0].end < w[1].start));
        let all = updates(Changes::new(&prev, &next));
        prop_assert_eq!(updates(Changes::new(&prev, &next).keeping(&kept)), all.clone());
        for (p, cell) in rect.positions().zip(left) {
            next[p] = cell;
        }
        prop_assert_eq!(updates(Changes::new(&prev, &next).keeping(&kept)), all);
    }
}

#[test]
fn a_region_stamped_as_before_is_passed_over_and_one_stamped_anew_is_not() {
    let mut term = terminal(8, 2);
    let mut painter = Painter::default();
    let region = Rect::new(0, 0, 4, 1);
    let mut frame = |text: &str, stamp: u64| {
        painter
            .draw(&mut term, |f, before| {
                write(f.buffer_mut(), text);
                let mut stamps = Stamps::default();
                stamps.stamp(before, region, stamp);
                stamps
            })
            .unwrap();
        let row: String = (0..8)
            .map(|x| term.backend().buffer()[(x, 0)].symbol().to_string())
            .collect();
        row
    };
    assert_eq!(frame("aaaaaa", 1), "aaaaaa  ");
    // The same stamp says the region drew the same: its cells are not compared (a stamp that
    // lied would leave them), the rest of the row is.
    assert_eq!(frame("bbbbbb", 1), "aaaabb  ");
    assert_eq!(frame("cccccc", 2), "cccccc  ");
}

#[test]
fn only_regions_stamped_alike_before_are_kept_a_range_a_row_joined_where_they_meet() {
    let area = Rect::new(0, 0, 8, 3);
    let mut before = Stamps::default();
    assert!(!before.stamp(&Stamps::default(), Rect::new(0, 0, 4, 2), 1));
    assert!(!before.stamp(&Stamps::default(), Rect::new(4, 2, 4, 1), 2));
    let mut now = Stamps::default();
    assert!(now.stamp(&before, Rect::new(0, 0, 4, 2), 1));
    assert!(!now.stamp(&before, Rect::new(4, 2, 4, 1), 3));
    assert!(!now.stamp(&before, Rect::new(6, 0, 0, 2), 1));
    let mut kept = Vec::new();
    now.kept(area, &mut kept);
    assert_eq!(kept, vec![0..4, 8..12]);
    // A frame stamped in another order finds its regions all the same; cells that follow one
    // another (in a row, or a row's end and the next row's start) are one range.
    assert!(!before.stamp(&Stamps::default(), Rect::new(4, 0, 4, 1), 4));
    let mut now = Stamps::default();
    assert!(now.stamp(&before, Rect::new(4, 0, 4, 1), 4));
    assert!(now.stamp(&before, Rect::new(0, 0, 4, 2), 1));
    now.kept(area, &mut kept);
    assert_eq!(kept, vec![0..12]);
}

#[test]
fn ranges_are_sorted_and_those_that_overlap_or_meet_joined() {
    let mut ranges = vec![7..9, 0..2, 1..4, 4..5, 10..10, 12..15];
    super::join(&mut ranges);
    assert_eq!(ranges, vec![0..5, 7..9, 10..10, 12..15]);
}
