//! The mouse on a rendered screen: clicks and the wheel hit-tested against the same layout the
//! view draws (`view::mouse::action`), turned into actions through `State::update`.

use crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use gpumon::model::{Config, Event};
use gpumon::screen::{Msg, State};
use gpumon::source::Framework;
use gpumon::source::Sample;
use gpumon::source::scripted::build::{GIB, gpu, machine, process};
use gpumon::view::mouse;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;

/// Two GPUs, five processes (sorted by device memory: 4312, 4400, 4521, 4610, 5002).
fn state() -> State {
    let (g0, g1) = (
        gpu(0, 140 * GIB, 60 * GIB, 0),
        gpu(1, 140 * GIB, 20 * GIB, 0),
    );
    let p = |pid, g, gib| {
        process(
            pid,
            g,
            gib * GIB,
            Framework::Pytorch,
            &format!("job{pid}.py"),
        )
    };
    let mut s = State::new(Config::new(1000, 60_000));
    s.update(Msg::from(Event::Started(machine())));
    for k in 0..5 {
        s.update(Msg::from(Event::Sample(Sample {
            at_ms: 1_763_812_900_000 + k * 1000,
            gpus: vec![g0.clone(), g1.clone()],
            processes: vec![
                p(4312, &g0, 50),
                p(4400, &g1, 12),
                p(4521, &g1, 5),
                p(4610, &g0, 3),
                p(5002, &g1, 1),
            ],
            ..Default::default()
        })));
    }
    s
}

/// The screen line (0-based) showing `text`.
fn row_of(s: &State, text: &str) -> u16 {
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    terminal.draw(|f| gpumon::view::render(f, s)).unwrap();
    let screen = format!("{}", terminal.backend());
    let row = screen.lines().position(|l| l.contains(text)).unwrap();
    u16::try_from(row).unwrap()
}

fn event(kind: MouseEventKind, row: u16) -> MouseEvent {
    MouseEvent {
        kind,
        column: 30,
        row,
        modifiers: KeyModifiers::NONE,
    }
}

#[test]
fn clicks_and_the_wheel_land_on_what_is_drawn() {
    let mut s = state();
    let area = Rect::new(0, 0, 120, 40);
    let click = MouseEventKind::Down(MouseButton::Left);
    let act = |s: &mut State, kind: MouseEventKind, text: &str, below: u16| {
        let e = event(kind, row_of(s, text) + below);
        let a = mouse::action(area, s, e).expect("an action");
        s.update(Msg::Action(a));
    };
    act(&mut s, click, "job4610.py", 0);
    assert_eq!(s.screen.selected.as_ref().unwrap().pid, 4610);
    // A notch moves three rows: from the fourth row to the first.
    act(&mut s, MouseEventKind::ScrollUp, "job4610.py", 0);
    assert_eq!(s.screen.selected.as_ref().unwrap().pid, 4312);
    act(&mut s, MouseEventKind::ScrollDown, "job4312.py", 0);
    assert_eq!(s.screen.selected.as_ref().unwrap().pid, 4610);

    // GPU1's lines focus it; a second click shows all GPUs again.
    act(&mut s, click, "GPU1 H200", 1);
    assert_eq!(
        s.screen.focus.as_deref(),
        Some(s.machine().gpus_in_order()[1].sample.uuid.as_str())
    );
    assert_eq!(s.screen.rows.len(), 3);
    act(&mut s, click, "GPU1 H200", 1);
    assert_eq!(s.screen.focus, None);

    // Borders and the header row do nothing.
    assert_eq!(mouse::action(area, &s, event(click, 0)), None);
    assert_eq!(
        mouse::action(area, &s, event(click, row_of(&s, "PID USER"))),
        None
    );
}

#[test]
fn the_mouse_does_nothing_under_the_help_or_on_a_tiny_screen() {
    let mut s = state();
    let row = row_of(&s, "job4610.py");
    let click = event(MouseEventKind::Down(MouseButton::Left), row);
    assert_eq!(mouse::action(Rect::new(0, 0, 40, 10), &s, click), None);
    s.update(Msg::Action(gpumon::input::Action::ToggleHelp));
    assert_eq!(mouse::action(Rect::new(0, 0, 120, 40), &s, click), None);
}
