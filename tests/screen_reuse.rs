//! Panels reused from the last frame (`view::render_reusing`) draw exactly what a fresh frame
//! draws: real recordings replayed tick by tick, with keys pressed between ticks and the
//! terminal resized, each frame compared cell for cell with `view::render`'s.

use gpumon::input::Action;
use gpumon::model::{Config, Event};
use gpumon::screen::{Msg, State};
use gpumon::source::replay::ReplaySource;
use gpumon::view::{self, Reuse};
use ratatui::Terminal;
use ratatui::backend::{Backend, TestBackend};
use ratatui::layout::Rect;

/// Keys pressed after some ticks (tick number, key): selection, panes, chart, scale, focus,
/// help, pause and the filter.
const KEYS: [(usize, Action); 14] = [
    (3, Action::Down),
    (5, Action::TogglePane),
    (6, Action::Down),
    (8, Action::TogglePane),
    (10, Action::ToggleChart),
    (13, Action::ToggleScale),
    (15, Action::ToggleChart),
    (17, Action::FocusNext),
    (19, Action::ToggleHelp),
    (20, Action::ToggleHelp),
    (22, Action::TogglePause),
    (26, Action::TogglePause),
    (28, Action::Up),
    (31, Action::FilterSelected),
];

fn replay_and_compare(path: &str, ascii: bool) -> (u64, u64) {
    let file = gpumon::recording::file::open(std::path::Path::new(path)).unwrap();
    let mut source = ReplaySource::read(path, file).unwrap();
    let config = Config {
        ascii,
        color: true,
        ..Config::new(source.header().interval_ms, 120_000)
    };
    let mut state = State::new(config);
    state.update(Msg::from(Event::Started(source.header().machine.clone())));
    let mut reused = Terminal::new(TestBackend::new(120, 40)).unwrap();
    let mut reuse = Reuse::default();
    let samples: Vec<_> = source.samples().map(Result::unwrap).collect();
    for (tick, sample) in samples.into_iter().enumerate() {
        state.update(Msg::from(Event::Sample(sample)));
        for (_, key) in KEYS.iter().filter(|(at, _)| *at == tick) {
            state.update(Msg::Action(*key));
        }
        let size = if (40..50).contains(&tick) {
            (100, 30)
        } else {
            (120, 40)
        };
        if reused.backend().size().unwrap() != size.into() {
            reused.backend_mut().resize(size.0, size.1);
            reused.resize(Rect::new(0, 0, size.0, size.1)).unwrap();
        }
        // Twice: the second frame of a tick is the one that copies every panel.
        for _ in 0..2 {
            reused
                .draw(|f| view::render_reusing(f, &state, &mut reuse))
                .unwrap();
            let mut fresh = Terminal::new(TestBackend::new(size.0, size.1)).unwrap();
            fresh.draw(|f| view::render(f, &state)).unwrap();
            assert_eq!(
                reused.backend().buffer(),
                fresh.backend().buffer(),
                "{path} tick {tick}: the reused frame differs from a fresh one"
            );
        }
    }
    reuse.counts()
}

#[test]
fn reused_panels_draw_what_a_fresh_frame_draws() {
    let dir = env!("CARGO_MANIFEST_DIR");
    for (path, ascii) in [
        (format!("{dir}/assets/demo.ndjson"), false),
        (format!("{dir}/assets/demo.ndjson"), true),
        (
            format!("{dir}/tests/fixtures/recordings/h100-probe-jobs.ndjson"),
            false,
        ),
        (
            format!("{dir}/tests/fixtures/recordings/h100-oom-session.ndjson"),
            false,
        ),
        (
            format!("{dir}/tests/fixtures/workloads/capped-frag/recording.ndjson.zst"),
            false,
        ),
    ] {
        let (copied, drawn) = replay_and_compare(&path, ascii);
        assert!(
            copied > 0 && drawn > 0,
            "{path}: {copied} panels copied, {drawn} drawn"
        );
    }
}
