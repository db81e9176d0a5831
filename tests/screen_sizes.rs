//! The screen at every size (issue 41): the memory chart stays beside a selection whose detail is
//! long (the demo's JAX process on its second GPU at 120x40) and a torchrun recording replayed at
//! 120x40 has its chart from the start with no empty rows under its panels; a table or alert list
//! that cannot show all its rows says how many more (72x20, 80x24); `J` with no distributed job
//! says there is none instead of retitling the table.

use gpumon::input::Action;
use gpumon::model::{Config, Event};
use gpumon::screen::{Msg, State};
use gpumon::source::replay::ReplaySource;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;

const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/demo.ndjson");
const TORCHRUN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/dist/h100-torchrun-leak/recording.ndjson.zst"
);

fn draw(state: &State, (w, h): (u16, u16)) -> String {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| gpumon::view::render(f, state)).unwrap();
    format!("{}", terminal.backend())
}

/// The recording at `path` replayed into a screen, `each` called after every sample.
fn replayed(path: &str, mut each: impl FnMut(usize, &State)) -> State {
    let input = gpumon::infile::Input::open(std::path::Path::new(path)).unwrap();
    let mut source = ReplaySource::read(path, input.reader()).unwrap();
    let mut state = State::new(Config::new(source.header().interval_ms, 120_000));
    state.update(Msg::from(Event::Started(source.header().machine.clone())));
    for (n, s) in source.samples().enumerate() {
        state.update(Msg::from(Event::Sample(s.unwrap())));
        each(n + 1, &state);
    }
    state
}

fn act(state: &mut State, actions: &[Action]) {
    for a in actions {
        state.update(Msg::Action(*a));
    }
}

/// Rows inside the bottom panels with nothing drawn in either.
fn empty_bottom_rows(state: &State, (w, h): (u16, u16)) -> usize {
    let regions = gpumon::view::regions(Rect::new(0, 0, w, h), state).unwrap();
    let screen = draw(state, (w, h));
    let lines: Vec<&str> = screen.lines().collect();
    regions.bottom.map_or(0, |b| {
        (b.y + 1..b.bottom() - 1)
            .filter(|y| {
                lines[usize::from(*y)]
                    .chars()
                    .all(|c| matches!(c, ' ' | '│' | '"'))
            })
            .count()
    })
}

#[test]
fn the_chart_stays_beside_the_jax_process_on_its_second_gpu() {
    let mut s = replayed(DEMO, |_, _| {});
    act(
        &mut s,
        &[
            Action::FilterPrompt,
            Action::PromptChar('4'),
            Action::PromptChar('8'),
            Action::PromptChar('9'),
            Action::PromptChar('6'),
            Action::PromptApply,
            Action::Down,
        ],
    );
    let t = s.selected_process().unwrap();
    assert_eq!((t.key.pid, t.sample.pool.value().is_some()), (4896, true));
    assert_ne!(
        t.key.gpu_uuid,
        s.machine().gpus_in_order()[0].sample.uuid,
        "GPU1's row"
    );
    let regions = gpumon::view::regions(Rect::new(0, 0, 120, 40), &s).unwrap();
    assert!(regions.chart.is_some_and(|c| c.height >= 8), "{regions:?}");
    insta::assert_snapshot!("demo_jax_gpu1_120x40", draw(&s, (120, 40)));
}

#[test]
fn a_torchrun_replay_has_its_chart_from_the_start_and_no_empty_rows() {
    let mut checked = 0;
    let s = replayed(TORCHRUN, |n, s| {
        let regions = gpumon::view::regions(Rect::new(0, 0, 120, 40), s).unwrap();
        assert!(regions.chart.is_some(), "sample {n}: no chart");
        assert_eq!(empty_bottom_rows(s, (120, 40)), 0, "sample {n}");
        checked += 1;
    });
    assert!(checked > 60);
    insta::assert_snapshot!("torchrun_leak_end_120x40", draw(&s, (120, 40)));
}

#[test]
fn a_table_and_an_alert_list_too_long_for_the_screen_say_how_many_more() {
    let s = replayed(DEMO, |_, _| {});
    assert_eq!(s.screen.table_len(), 6);
    let small = draw(&s, (72, 20));
    assert!(
        small.contains(" +4 more "),
        "the table shows 2 of 6:\n{small}"
    );
    insta::assert_snapshot!("demo_end_72x20", small);
    let medium = draw(&s, (80, 24));
    assert!(
        !medium.contains(" more ┤") && medium.contains("│ +3 more ─ a lists them"),
        "the table shows all 6, the alerts 5 of 8:\n{medium}"
    );
    insta::assert_snapshot!("demo_end_80x24", medium);
}

#[test]
fn j_with_no_distributed_job_says_there_is_none() {
    let mut s = replayed(DEMO, |_, _| {});
    assert!(s.machine().jobs.is_empty());
    act(&mut s, &[Action::ToggleJobs]);
    assert!(!s.screen.by_job, "nothing to group: the table as it was");
    let screen = draw(&s, (120, 40));
    assert!(
        screen.contains("processes (sorted by device memory)"),
        "{screen}"
    );
    assert!(
        screen.contains("no distributed job here: J groups a job's ranks"),
        "{screen}"
    );
    // With a job there, `J` groups as before.
    let mut t = replayed(TORCHRUN, |_, _| {});
    act(&mut t, &[Action::ToggleJobs]);
    assert!(t.screen.by_job);
}
