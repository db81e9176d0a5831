//! What reaches the terminal: ratatui writes only the cells that changed, so redrawing an
//! unchanged state writes next to nothing, and a new sample far less than a whole frame.

use std::cell::Cell;
use std::io::Write;
use std::rc::Rc;

use gpumon::model::{Config, Event};
use gpumon::screen::{Msg, State};
use gpumon::source::scripted::build::{GIB, gpu, machine, process};
use gpumon::source::{Framework, Sample};
use gpumon::view;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};

/// Counts the bytes written.
#[derive(Clone, Default)]
struct Count(Rc<Cell<usize>>);

impl Write for Count {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.set(self.0.get() + b.len());
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn sample(k: u64) -> Sample {
    let g = gpu(0, 80 * GIB, 20 * GIB, GIB / 2);
    let processes = (0..2)
        .map(|i| process(4000 + i, &g, 9 * GIB, Framework::Pytorch, "python train.py"))
        .collect();
    Sample {
        at_ms: 1_763_812_900_000 + k * 1000,
        gpus: vec![g],
        processes,
        ..Default::default()
    }
}

#[test]
fn only_changed_cells_are_written() {
    let mut state = State::new(Config {
        color: true,
        ..Config::new(1000, 600_000)
    });
    state.update(Msg::from(Event::Started(machine())));
    for k in 0..100 {
        state.update(Msg::from(Event::Sample(sample(k))));
    }
    let count = Count::default();
    let viewport = Viewport::Fixed(Rect::new(0, 0, 120, 40));
    let mut terminal = Terminal::with_options(
        CrosstermBackend::new(count.clone()),
        TerminalOptions { viewport },
    )
    .unwrap();
    terminal.draw(|f| view::render(f, &state)).unwrap();
    let full = count.0.replace(0);
    assert!(full > 2000, "a first frame writes every cell: {full} bytes");

    terminal.draw(|f| view::render(f, &state)).unwrap();
    let unchanged = count.0.replace(0);
    assert!(unchanged < 64, "an unchanged frame: {unchanged} bytes");

    // Steady readings: the flat sparklines shift without changing a glyph.
    state.update(Msg::from(Event::Sample(sample(100))));
    terminal.draw(|f| view::render(f, &state)).unwrap();
    let next = count.0.replace(0);
    eprintln!("bytes: first frame {full}, unchanged {unchanged}, steady new sample {next}");
    assert!(
        next < full / 10,
        "a steady new sample: {next} of {full} bytes"
    );
}
