//! The demo's promises on a rendered screen (TestBackend): paused, nothing on it changes while
//! its replay goes on; each loop says which it is and starts clean (no exited rows or alerts of
//! the last, every count agreeing with the panel's); a replay that fails or ends is told in
//! its own time, never the wall clock's; a control character in the filter is drawn escaped;
//! the block map says what a replay can do, and shows the maps the demo holds.

#[path = "common/demo.rs"]
mod demo;

use demo::counts;
use gpumon::input::Action;
use gpumon::model::{Config, Event};
use gpumon::screen::{Filter, Msg, State};
use gpumon::source::replay::ReplaySource;
use gpumon::source::{Source, SourceError};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn draw(state: &State) -> String {
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    terminal.draw(|f| gpumon::view::render(f, state)).unwrap();
    let buf = terminal.backend().buffer();
    (0..40)
        .map(|y| (0..120).map(|x| buf[(x, y)].symbol()).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The demo as `gpumon --demo` plays it: its source's samples and laps, as the sampler sends them.
struct Demo {
    source: ReplaySource<gpumon::source::replay::DemoReader>,
    state: State,
}

impl Demo {
    fn new() -> Demo {
        let mut source = ReplaySource::demo().unwrap();
        let config = Config {
            replay_speed: Some(10.0),
            ..Config::new(source.header().interval_ms, 120_000)
        };
        let mut state = State::new(config);
        state.update(Msg::from(Event::Started(source.machine().unwrap())));
        Demo { source, state }
    }

    /// One tick: a sample, or the news of a new lap.
    fn tick(&mut self) -> Option<u32> {
        match self.source.sample() {
            Ok(s) => {
                self.state.update(Msg::from(Event::Sample(s)));
                None
            }
            Err(SourceError::Lapped(n)) => {
                self.state.update(Msg::from(Event::Lap(n)));
                Some(n)
            }
            Err(e) => panic!("{e}"),
        }
    }

    fn play_until_lap(&mut self, lap: u32) {
        while self.tick() != Some(lap) {}
    }
}

#[test]
fn each_loop_of_the_demo_says_so_and_starts_clean_with_counts_that_agree() {
    let mut demo = Demo::new();
    demo.play_until_lap(2);
    let first = draw(&demo.state);
    assert!(first.contains("replay x10 ─ loop 2"), "{first}");
    assert!(!first.contains("exited"), "nothing of loop 1:\n{first}");
    assert!(demo.state.machine().alerts.is_empty(), "{first}");
    // At the end of loop 2 and of loop 3, every count agrees and no OOM is raised twice.
    for lap in [3, 4] {
        let (mut last, mut ooms) = (String::new(), 0);
        while demo.tick() != Some(lap) {
            last = draw(&demo.state);
            let (gpu, panel) = counts(&last);
            assert_eq!(gpu, panel, "the GPU's count and the panel's:\n{last}");
            let alerts = &demo.state.machine().alerts;
            ooms = alerts.iter().filter(|a| a.title.contains("OOM")).count();
        }
        assert_eq!(ooms, 2, "each OOM raised once in loop {}", lap - 1);
        assert!(last.contains(&format!("loop {}", lap - 1)), "{last}");
        assert_eq!(counts(&last), (8, 8), "{last}");
    }
}

#[test]
fn a_second_loops_process_charts_only_what_its_detail_says() {
    let mut demo = Demo::new();
    // The fragmenting job, known by its OOM in loop 1.
    let mut pid = None;
    while demo.tick() != Some(2) {
        let alerts = &demo.state.machine().alerts;
        pid = pid.or_else(|| alerts.iter().find(|a| a.class == "fragmentation")?.pid);
    }
    let pid = pid.expect("the demo's fragmentation OOM");
    // Its first sample of loop 2, before its probe's first figures: its pool is n/a, and the
    // chart draws no pool of loop 1's.
    let has = |d: &Demo| d.state.machine().processes.keys().any(|k| k.pid == pid);
    while !has(&demo) {
        demo.tick();
    }
    let s = &mut demo.state;
    s.update(Msg::Action(Action::FilterPrompt));
    for c in pid.to_string().chars() {
        s.update(Msg::Action(Action::PromptChar(c)));
    }
    s.update(Msg::Action(Action::PromptApply));
    let screen = draw(s);
    assert!(screen.contains("loop 2"), "{screen}");
    assert!(s.selected_process().is_some_and(|t| t.key.pid == pid));
    let t = s.selected_process().unwrap();
    assert_eq!(
        t.first_seen_ms, t.last_seen_ms,
        "its first sample of loop 2"
    );
    let legend_pool = screen.lines().any(|l| l.contains("││pool "));
    if t.sample.pool.value().is_none() {
        assert!(screen.contains("pool n/a"), "the detail:\n{screen}");
        assert!(!legend_pool, "no pool on the chart:\n{screen}");
    }
}

#[test]
fn a_paused_demo_stays_as_it_was_while_its_replay_goes_on() {
    let mut demo = Demo::new();
    // Just after the fragmentation OOM: an exited row whose age would grow.
    for _ in 0..80 {
        demo.tick();
    }
    demo.state.update(Msg::Action(Action::TogglePause));
    let paused = draw(&demo.state);
    assert!(paused.contains("exited"), "{paused}");
    for _ in 0..20 {
        demo.tick();
    }
    assert_eq!(draw(&demo.state), paused, "nothing moved while paused");
    demo.state.update(Msg::Action(Action::TogglePause));
    let resumed = draw(&demo.state);
    assert_ne!(resumed, paused, "it caught up");
    assert!(!resumed.contains("stale"), "{resumed}");
}

#[test]
fn a_failing_replay_is_told_in_the_replays_time() {
    let mut demo = Demo::new();
    for _ in 0..30 {
        demo.tick();
    }
    let at_ms = demo.source.now_ms();
    demo.state.update(Msg::from(Event::SourceFailed {
        at_ms,
        reason: "replay stopped: line 32: not JSON".into(),
    }));
    let screen = draw(&demo.state);
    let clock = gpumon::model::units::clock(at_ms);
    assert!(
        screen.contains(&format!("source failing since {clock}")),
        "{screen}"
    );
    assert!(!screen.contains("stale"), "{screen}");
}

#[test]
fn a_control_character_in_the_filter_is_drawn_escaped() {
    let mut demo = Demo::new();
    for _ in 0..30 {
        demo.tick();
    }
    demo.state.screen.filter = Filter::parse("py\tthon\u{1b}[2J");
    demo.state.update(Msg::Action(Action::CycleSort));
    let screen = draw(&demo.state);
    assert!(
        !screen.chars().any(|c| c.is_control() && c != '\n'),
        "{screen:?}"
    );
    assert!(
        screen.contains("filter: \"py\\u{9}thon\\u{1b}[2j\""),
        "{screen}"
    );
    for line in screen.lines() {
        assert_eq!(line.chars().count(), 120, "{line}");
    }
}

/// The demo's first process once its probe reports its pool, before any map of it was taken:
/// `m` says plainly what a replay can do.
#[test]
fn the_map_says_plainly_what_a_replay_can_do() {
    let mut demo = Demo::new();
    let probed = |d: &Demo| {
        let t = d.state.selected_process();
        t.is_some_and(|t| t.sample.pool.value().is_some())
    };
    while !probed(&demo) {
        demo.tick();
    }
    let t = demo.state.selected_process().unwrap();
    let (pid, start) = (t.key.pid, t.key.start_time);
    assert!(
        demo.state.machine().map_of(pid, start).is_none(),
        "no map yet"
    );
    // As `gpumon --demo` sets it up: no requests to a recording's probes.
    demo.state.screen.requests_off = Some("the demo replays a recording".into());
    demo.state.update(Msg::Action(Action::MapPane));
    let screen = draw(&demo.state);
    let text = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("no map in this recording"), "{screen}");
    assert!(text.contains("a replay has not"), "{screen}");
    assert!(!text.contains("M asks"), "{screen}");
    assert!(!text.contains("not probed (probed"), "{screen}");
    demo.state.update(Msg::Action(Action::AskMap));
    let screen = draw(&demo.state);
    assert!(
        screen.contains("requests to probes are off: the demo replays a recording"),
        "{screen}"
    );
}

/// The demo holds the block maps its probes took on the H100: `m` on the fragmenting PyTorch
/// job's row, after its OOM, shows the map at the failure: the request that did not fit, the
/// holes it fell between and the line of the job's code that holds the blocks.
#[test]
fn the_demo_s_fragmenting_job_shows_its_map_at_the_oom_with_its_sites() {
    let mut demo = Demo::new();
    let oom = loop {
        assert_eq!(
            demo.tick(),
            None,
            "the fragmentation OOM comes in the first loop"
        );
        let alerts = &demo.state.machine().alerts;
        if let Some(a) = alerts.iter().find(|a| a.class == "fragmentation") {
            break a.clone();
        }
    };
    let pid = oom.pid.expect("the OOM names its process");
    demo.state.screen.requests_off = Some("the demo replays a recording".into());
    let s = &mut demo.state;
    s.update(Msg::Action(Action::FilterPrompt));
    for c in pid.to_string().chars() {
        s.update(Msg::Action(Action::PromptChar(c)));
    }
    s.update(Msg::Action(Action::PromptApply));
    assert_eq!(s.selected_process().map(|t| t.key.pid), Some(pid));
    s.update(Msg::Action(Action::MapPane));
    let screen = draw(s);
    let text = screen
        .lines()
        .map(|l| l.trim_matches(|c: char| c == '│' || c.is_whitespace()))
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        text.contains(&format!("block map: pid {pid} on GPU0, torch at the OOM")),
        "{screen}"
    );
    assert!(
        text.contains("a 512.00 MiB request does not fit"),
        "{screen}"
    );
    assert!(
        text.contains("in 917 holes, the largest 14.00 MiB"),
        "{screen}"
    );
    assert!(text.contains("gpu/torch_frag.py:48 <module>"), "{screen}");
    assert!(!text.contains("no map"), "{screen}");
    // The OOM's evidence names the same site.
    assert!(
        oom.evidence
            .iter()
            .any(|e| e.contains("held by gpu/torch_frag.py:48 <module>")),
        "{oom:?}"
    );
}
