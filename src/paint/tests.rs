//! The painter's updates against ratatui's own diff, cell for cell, and its frames on a
//! `TestBackend` against what was rendered.
#![allow(deprecated)] // `Cell::skip`

use std::num::NonZeroU16;

use ratatui::backend::TestBackend;
use ratatui::buffer::{Buffer, Cell, CellDiffOption, CellWidth};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};
use ratatui::{Terminal, TerminalOptions, Viewport};

use super::diff::narrow;
use super::{Changes, Painter};

/// A small deterministic generator (xorshift), so a failure names its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[(self.next() % from.len() as u64) as usize]
    }
}

const SYMBOLS: &[&str] = &[
    " ", " ", " ", "a", "a", "b", "│", "─", "┼", "█", "▒", "▇", "⣿", "⠒", "⡀", "コ", "漢", "❤️",
    "é", "ﾞ",
];

fn random_cell(rng: &mut Rng, odd: bool) -> Cell {
    let mut cell = Cell::default();
    cell.set_symbol(rng.pick(SYMBOLS));
    cell.fg = rng.pick(&[Color::Reset, Color::Red, Color::Rgb(1, 2, 3)]);
    cell.bg = rng.pick(&[Color::Reset, Color::Reset, Color::Blue]);
    cell.modifier = rng.pick(&[Modifier::empty(), Modifier::BOLD, Modifier::REVERSED]);
    if odd {
        match rng.next() % 4 {
            0 => cell.diff_option = CellDiffOption::Skip,
            1 => cell.diff_option = CellDiffOption::AlwaysUpdate,
            2 => cell.diff_option = CellDiffOption::ForcedWidth(NonZeroU16::new(2).unwrap()),
            _ => cell.skip = true,
        }
    }
    cell
}

/// `next` is `prev` with some cells changed, as consecutive frames are.
fn frames(rng: &mut Rng, area: Rect, odd_cells: bool) -> (Buffer, Buffer) {
    let mut prev = Buffer::empty(area);
    for cell in &mut prev.content {
        let odd = odd_cells && rng.next().is_multiple_of(10);
        *cell = random_cell(rng, odd);
    }
    let mut next = prev.clone();
    for cell in &mut next.content {
        if rng.next().is_multiple_of(3) {
            let odd = odd_cells && rng.next().is_multiple_of(10);
            *cell = random_cell(rng, odd);
        }
    }
    // ratatui's diff indexes past the end for a wide character in the last cell (ours stops
    // there); ratatui's own text never puts one there.
    for buf in [&mut prev, &mut next] {
        if let Some(last) = buf.content.last_mut()
            && last.cell_width() > 1
        {
            *last = Cell::new("x");
        }
    }
    (prev, next)
}

fn updates<'a>(it: impl Iterator<Item = (u16, u16, &'a Cell)>) -> Vec<(u16, u16, Cell)> {
    it.map(|(x, y, c)| (x, y, c.clone())).collect()
}

#[test]
fn the_updates_are_ratatuis_for_any_two_frames() {
    for seed in 1..400u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let area = Rect::new(
            (seed % 3) as u16,
            (seed % 2) as u16,
            1 + (seed % 13) as u16,
            1 + (seed % 5) as u16,
        );
        let (prev, next) = frames(&mut rng, area, seed % 2 == 0);
        assert_eq!(
            updates(Changes::new(&prev, &next)),
            updates(prev.diff_iter(&next)),
            "seed {seed}"
        );
        // A frame against an empty screen (the first, or after a clear) and against itself.
        let empty = Buffer::empty(area);
        assert_eq!(
            updates(Changes::new(&empty, &next)),
            updates(empty.diff_iter(&next)),
            "seed {seed}, from empty"
        );
        assert_eq!(
            updates(Changes::new(&next, &next)),
            updates(next.diff_iter(&next))
        );
    }
}

#[test]
fn a_shorter_next_frame_is_compared_as_far_as_both_go() {
    let mut rng = Rng(7);
    let (prev, _) = frames(&mut rng, Rect::new(0, 0, 6, 4), false);
    let (next, _) = frames(&mut rng, Rect::new(0, 0, 6, 2), false);
    assert_eq!(
        updates(Changes::new(&prev, &next)),
        updates(prev.diff_iter(&next))
    );
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

#[test]
fn the_terminal_shows_what_ratatuis_draw_would_show() {
    let mut term = terminal(8, 2);
    let mut theirs = terminal(8, 2);
    let mut painter = Painter::default();
    for text in ["hello", "help", "⣿コa", "", "❤️ bye", "bye"] {
        painter
            .draw(&mut term, |f| write(f.buffer_mut(), text))
            .unwrap();
        theirs.draw(|f| write(f.buffer_mut(), text)).unwrap();
        assert_eq!(term.backend().buffer(), theirs.backend().buffer(), "{text}");
    }
}

#[test]
fn a_resize_or_a_clear_writes_the_whole_frame_again() {
    let mut term = terminal(8, 2);
    let mut painter = Painter::default();
    painter
        .draw(&mut term, |f| write(f.buffer_mut(), "same"))
        .unwrap();
    term.backend_mut().resize(10, 3);
    term.resize(Rect::new(0, 0, 10, 3)).unwrap();
    painter
        .draw(&mut term, |f| write(f.buffer_mut(), "same"))
        .unwrap();
    let mut want = Buffer::empty(Rect::new(0, 0, 10, 3));
    write(&mut want, "same");
    term.backend().assert_buffer(&want);

    term.clear().unwrap();
    painter.invalidate();
    painter
        .draw(&mut term, |f| write(f.buffer_mut(), "same"))
        .unwrap();
    term.backend().assert_buffer(&want);
}

#[test]
fn the_terminals_spare_buffer_is_kept_empty_so_two_buffers_are_held_as_ratatui_holds() {
    let mut term = terminal(8, 2);
    let mut painter = Painter::default();
    for _ in 0..2 {
        painter
            .draw(&mut term, |f| write(f.buffer_mut(), "x"))
            .unwrap();
        term.swap_buffers();
        assert!(term.current_buffer_mut().content.is_empty());
        term.swap_buffers();
    }
    // A resize sizes it again; the next frame empties it.
    term.backend_mut().resize(10, 3);
    term.resize(Rect::new(0, 0, 10, 3)).unwrap();
    painter.invalidate();
    painter
        .draw(&mut term, |f| write(f.buffer_mut(), "x"))
        .unwrap();
    term.swap_buffers();
    assert!(term.current_buffer_mut().content.is_empty());
}
