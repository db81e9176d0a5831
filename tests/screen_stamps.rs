//! The screen painted frame after frame through the painter, which passes over the regions a
//! frame stamped as the frame before (`view::render_stamped`), shows at every frame exactly what
//! rendering that frame afresh shows: through flat stretches (every stamp kept), growth, an OOM
//! and an exit, selection moves, the alerts pane, the help popup over stamped regions, ASCII
//! mode, and a resize.

use gpumon::input::Action;
use gpumon::model::{Config, Event};
use gpumon::paint::{Painter, Stamps};
use gpumon::screen::{Msg, State};
use gpumon::source::scripted::build::{GIB, MIB, gpu, machine, process};
use gpumon::source::{Framework, Sample};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;

/// 2025-11-22 12:01:40 UTC.
const T0: u64 = 1_763_812_900_000;

/// Tick `k`: a job flat for ten ticks, then growing for ten, then flat; a second one that fails
/// to allocate at tick 25 and exits at 27.
fn sample(k: u64) -> Sample {
    let total = 80 * 1024 * MIB;
    let g0 = gpu(0, total, 0, 0);
    let grown = 10 * GIB + k.clamp(10, 20).saturating_sub(10) * GIB;
    let mut processes = vec![process(
        4312,
        &g0,
        grown,
        Framework::Pytorch,
        "python train.py",
    )];
    if k < 27 {
        processes.push(process(
            873,
            &g0,
            2 * GIB,
            Framework::Jax,
            "python serve.py",
        ));
    }
    let failures = if k == 25 {
        let line = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 2.00 GiB is free.";
        let parsed = gpumon::oom::parse_all(line.as_bytes()).remove(0);
        vec![parsed.into_failure(T0 + k * 1000, "/srv/log/873.out", Some(873))]
    } else {
        Vec::new()
    };
    let used: u64 = processes.iter().filter_map(|p| p.device_memory.get()).sum();
    Sample {
        at_ms: T0 + k * 1000,
        gpus: vec![gpu(0, total, used + GIB, 615 * MIB)],
        processes,
        failures,
        ..Default::default()
    }
}

/// What rendering `state` afresh at `area` shows.
fn fresh(state: &State, area: Rect) -> ratatui::buffer::Buffer {
    let mut t = Terminal::new(TestBackend::new(area.width, area.height)).unwrap();
    t.draw(|f| gpumon::view::render(f, state)).unwrap();
    t.backend().buffer().clone()
}

/// Actions taken before the frame of tick `k`.
fn actions(k: u64) -> &'static [Action] {
    match k {
        5 => &[Action::Down],
        8 => &[Action::ToggleHelp],
        9 => &[Action::ToggleHelp],
        14 => &[Action::TogglePane],
        16 => &[Action::TogglePane],
        30 => &[Action::Up],
        _ => &[],
    }
}

#[test]
fn every_frame_painted_over_stamps_is_the_frame_rendered_afresh() {
    let mut state = State::new(Config {
        color: true,
        ..Config::new(1000, 60_000)
    });
    state.update(Msg::from(Event::Started(machine())));
    let (mut w, mut h) = (120, 40);
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    let mut painter = Painter::default();
    let mut kept_regions = 0;
    let mut last = None;
    for k in 0..40 {
        state.update(Msg::from(Event::Sample(sample(k))));
        for a in actions(k) {
            state.update(Msg::Action(*a));
        }
        if k == 33 {
            state.config.ascii = true;
        }
        if k == 36 {
            (w, h) = (100, 30);
            terminal.backend_mut().resize(w, h);
            terminal.resize(Rect::new(0, 0, w, h)).unwrap();
            painter.invalidate();
        }
        let mut stamps = None;
        painter
            .draw(&mut terminal, |f, before| {
                let s = gpumon::view::render_stamped(f, &state, before);
                stamps = Some(s.clone());
                s
            })
            .unwrap();
        let area = Rect::new(0, 0, w, h);
        assert_eq!(
            terminal.backend().buffer(),
            &fresh(&state, area),
            "tick {k}"
        );
        let stamps = stamps.unwrap();
        if state.screen.help {
            assert_eq!(stamps.iter().count(), 0, "no stamps under a popup");
        }
        let before: Vec<_> = last.iter().flat_map(|s: &Stamps| s.iter()).collect();
        kept_regions += stamps.iter().filter(|s| before.contains(s)).count();
        last = Some(stamps);
    }
    // Regions repeat their stamps from frame to frame: the painter did pass over them.
    assert!(
        kept_regions >= 20,
        "{kept_regions} regions stamped as in the frame before"
    );
}
