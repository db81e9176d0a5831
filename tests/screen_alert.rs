//! An alert read whole (Enter in the alerts list): the demo's device-full OOM, whose evidence
//! and remedy the alerts panel cuts at every size, drawn over the screen at 72x20 (the smallest
//! screen), 80x24 and 120x40, scrolled to its end with PgDn as the app loop does it
//! (`view::alert_view::scroll` at the screen's size), every word of it readable on the way;
//! Esc closes it, Enter selects its process; the mouse selects, opens and scrolls.

use crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use gpumon::input::Action;
use gpumon::model::{Alert, Config, Event};
use gpumon::screen::{Msg, Pane, State};
use gpumon::source::replay::ReplaySource;
use gpumon::view::{alert_view, mouse};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;

const SIZES: [(u16, u16); 3] = [(72, 20), (80, 24), (120, 40)];

/// The demo replayed to its end through the screen's update, as `gpumon --demo` shows it.
fn demo() -> State {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/demo.ndjson");
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut source = ReplaySource::read(path, file).unwrap();
    let config = Config {
        replay_speed: Some(10.0),
        ..Config::new(source.header().interval_ms, 120_000)
    };
    let mut state = State::new(config);
    state.update(Msg::from(Event::Started(source.header().machine.clone())));
    for s in source.samples() {
        state.update(Msg::from(Event::Sample(s.unwrap())));
    }
    state
}

/// The demo with its newest alert (the device-full OOM) open.
fn opened() -> State {
    let mut s = demo();
    s.update(Msg::Action(Action::TogglePane));
    s.update(Msg::Action(Action::Enter));
    let open = s.open_alert().expect("Enter opens the selected alert");
    assert!(open.title.contains("device-full"), "{}", open.title);
    s
}

fn screen(state: &State, (w, h): (u16, u16)) -> Vec<String> {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| gpumon::view::render(f, state)).unwrap();
    let buf = terminal.backend().buffer();
    (0..h)
        .map(|y| (0..w).map(|x| buf[(x, y)].symbol()).collect())
        .collect()
}

/// A key as the app loop hands it over: measured by the view at the screen's size.
fn key(state: &mut State, size: (u16, u16), action: Action) {
    let area = Rect::new(0, 0, size.0, size.1);
    let action = alert_view::scroll(area, state, action);
    state.update(Msg::Action(action));
}

/// The text rows between the header and the bottom border, borders and padding cut.
fn text_rows(rows: &[String]) -> Vec<String> {
    rows[1..rows.len() - 2]
        .iter()
        .map(|r| {
            let inner: String = r.chars().skip(2).collect();
            let inner: String = inner.chars().take(inner.chars().count() - 2).collect();
            inner.trim_end().to_string()
        })
        .collect()
}

fn words(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// PgDn to the end at `size`, putting the rows seen back together: the whole text of the alert.
fn read_whole(state: &mut State, size: (u16, u16)) -> String {
    let mut all: Vec<String> = Vec::new();
    loop {
        let top = state.screen.alert_open.as_ref().unwrap().top;
        for (i, row) in text_rows(&screen(state, size)).into_iter().enumerate() {
            if top + i >= all.len() {
                all.push(row);
            }
        }
        key(state, size, Action::PageDown);
        if state.screen.alert_open.as_ref().unwrap().top == top {
            return all.join("\n");
        }
    }
}

fn the_alert(state: &State) -> Alert {
    state.open_alert().unwrap().clone()
}

#[test]
fn the_open_alert_shows_all_its_evidence_and_remedy_at_every_size() {
    for size in SIZES {
        let mut s = opened();
        let (w, h) = size;
        insta::assert_snapshot!(format!("alert_open_{w}x{h}"), screen(&s, size).join("\n"));
        let alert = the_alert(&s);
        let whole = words(&read_whole(&mut s, size));
        for e in &alert.evidence {
            assert!(whole.contains(&words(e)), "{size:?}: {e:?} in\n{whole}");
        }
        let remedy = alert.remedy.as_deref().unwrap();
        assert!(
            whole.contains(&words(remedy)),
            "{size:?}: the remedy in\n{whole}"
        );
        assert!(whole.contains("Enter selects it"), "{whole}");
        // At its end: the last row of the text on the screen's last row, and no further.
        insta::assert_snapshot!(format!("alert_end_{w}x{h}"), screen(&s, size).join("\n"));
        let end = s.screen.alert_open.as_ref().unwrap().top;
        key(&mut s, size, Action::Down);
        assert_eq!(s.screen.alert_open.as_ref().unwrap().top, end, "no further");
        key(&mut s, size, Action::PageUp);
        key(&mut s, size, Action::Up);
        let back = s.screen.alert_open.as_ref().unwrap().top;
        assert!(
            back < end || end == 0,
            "{size:?}: back up from {end} to {back}"
        );
    }
}

#[test]
fn esc_closes_it_and_enter_selects_its_process() {
    let mut s = opened();
    let pid = the_alert(&s).pid;
    s.update(Msg::Action(Action::Escape));
    assert!(s.open_alert().is_none());
    assert_eq!(s.screen.pane, Pane::Alerts, "back in the alerts list");
    assert!(screen(&s, (120, 40)).join("\n").contains("alerts (8)"));
    s.update(Msg::Action(Action::Enter));
    s.update(Msg::Action(Action::Enter));
    assert!(s.open_alert().is_none());
    assert_eq!(s.screen.pane, Pane::Processes);
    assert_eq!(s.selected_process().map(|t| t.key.pid), pid);
}

#[test]
fn the_footer_names_the_open_alerts_keys() {
    let s = opened();
    for size in SIZES {
        let rows = screen(&s, size);
        let footer = rows.last().unwrap();
        assert!(
            footer.contains("Esc close") && footer.contains("PgUp PgDn scroll"),
            "{size:?}: {footer}"
        );
    }
}

fn mouse_event(kind: MouseEventKind, column: u16, row: u16) -> MouseEvent {
    MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    }
}

#[test]
fn the_mouse_selects_opens_and_scrolls_an_alert() {
    let mut s = demo();
    let size = (120, 40);
    let area = Rect::new(0, 0, size.0, size.1);
    let rows = screen(&s, size);
    let (y, line) = rows
        .iter()
        .enumerate()
        .find(|(_, l)| l.contains("PyTorch OOM: fragmentation"))
        .unwrap();
    let x = u16::try_from(line.chars().position(|c| c == 'P').unwrap()).unwrap();
    let y = u16::try_from(y).unwrap();
    let click = mouse_event(MouseEventKind::Down(MouseButton::Left), x, y);
    // The first click selects it, in the alerts pane.
    let action = mouse::action(area, &s, click).expect("a click on an alert");
    s.update(Msg::Action(action));
    assert_eq!(s.screen.pane, Pane::Alerts);
    assert!(s.selected_alert().unwrap().title.contains("fragmentation"));
    // Clicked again where it is drawn now, it opens.
    let rows = screen(&s, size);
    let y = rows
        .iter()
        .position(|l| l.contains("> ") && l.contains("fragmentation"))
        .unwrap();
    let click = mouse_event(MouseEventKind::Down(MouseButton::Left), x, y as u16);
    let action = mouse::action(area, &s, click).unwrap();
    s.update(Msg::Action(action));
    assert!(the_alert(&s).title.contains("fragmentation"));
    // Over the device-full OOM, longer than a 72x20 screen, the wheel scrolls as far as its
    // text goes at that size.
    let mut s = opened();
    let small = (72, 20);
    let area = Rect::new(0, 0, small.0, small.1);
    for _ in 0..20 {
        let wheel = mouse_event(MouseEventKind::ScrollDown, 10, 10);
        let action = mouse::action(area, &s, wheel).unwrap();
        s.update(Msg::Action(alert_view::scroll(area, &s, action)));
    }
    let top = s.screen.alert_open.as_ref().unwrap().top;
    assert!(top > 0, "scrolled");
    let text = screen(&s, small).join("\n");
    assert!(text.contains("Enter selects it"), "at its end:\n{text}");
}
