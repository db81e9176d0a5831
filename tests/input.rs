//! Keys through `State::update`, no terminal: filter, sort, pause, focus, peaks, PID reuse.

use gpumon::input::Action;
use gpumon::model::{Config, Event};
use gpumon::screen::{Filter, Msg, Sort, State};
use gpumon::source::scripted::build::{self, GIB, MIB};
use gpumon::source::{Framework, Reading, Sample};

const T0: u64 = 1_763_800_000_000;

fn state() -> State {
    let mut s = State::new(Config::new(1000, 600_000));
    s.update(Msg::from(Event::Started(build::machine())));
    s
}

/// Three processes on two GPUs; pid 200 grows by 100 MiB a tick.
fn sample(k: u64) -> Sample {
    let (g0, g1) = (
        build::gpu(0, 80 * GIB, 30 * GIB, 480 * MIB),
        build::gpu(1, 80 * GIB, 6 * GIB, 480 * MIB),
    );
    Sample {
        at_ms: T0 + k * 1000,
        processes: vec![
            build::process(100, &g0, 20 * GIB, Framework::Jax, "python train.py"),
            build::process(
                200,
                &g1,
                GIB + k * 100 * MIB,
                Framework::Pytorch,
                "python finetune.py",
            ),
            build::process(300, &g0, 2 * GIB, Framework::Cupy, "python fft.py"),
        ],
        gpus: vec![g0, g1],
        ..Default::default()
    }
}

fn pids(s: &State) -> Vec<u32> {
    s.screen.rows.iter().map(|k| k.pid).collect()
}

fn act(s: &mut State, actions: &[Action]) {
    for a in actions {
        s.update(Msg::Action(*a));
    }
}

fn type_text(s: &mut State, text: &str) {
    act(s, &[Action::FilterPrompt]);
    for c in text.chars() {
        s.update(Msg::Action(Action::PromptChar(c)));
    }
    s.update(Msg::Action(Action::PromptApply));
}

#[test]
fn filter_by_pid_narrows_and_escape_restores() {
    let mut s = state();
    for k in 0..3 {
        s.update(Msg::from(Event::Sample(sample(k))));
    }
    assert_eq!(pids(&s), vec![100, 300, 200], "sorted by device memory");
    type_text(&mut s, "300");
    assert_eq!(s.screen.filter, Some(Filter::Pid(300)));
    assert_eq!(pids(&s), vec![300]);
    assert_eq!(
        s.screen.selected.as_ref().map(|k| k.pid),
        Some(300),
        "the selection follows the filter"
    );
    s.update(Msg::from(Event::Sample(sample(3))));
    assert_eq!(pids(&s), vec![300], "the filter holds across samples");
    act(&mut s, &[Action::Escape]);
    assert_eq!(s.screen.filter, None);
    assert_eq!(pids(&s), vec![100, 300, 200]);
}

#[test]
fn text_filter_matches_command_or_user_and_prompt_escape_keeps_the_filter() {
    let mut s = state();
    s.update(Msg::from(Event::Sample(sample(0))));
    type_text(&mut s, "FineTune");
    assert_eq!(pids(&s), vec![200], "case-insensitive match on the command");
    act(
        &mut s,
        &[
            Action::FilterPrompt,
            Action::PromptChar('x'),
            Action::Escape,
        ],
    );
    assert_eq!(s.screen.prompt, None);
    assert_eq!(
        pids(&s),
        vec![200],
        "Esc in the prompt closes it and keeps the filter"
    );
    act(&mut s, &[Action::FilterPrompt]);
    assert_eq!(
        s.screen.prompt.as_deref(),
        Some("finetune"),
        "the prompt opens on the current filter"
    );
    for _ in 0..8 {
        s.update(Msg::Action(Action::PromptBackspace));
    }
    act(&mut s, &[Action::PromptApply]);
    assert_eq!(pids(&s).len(), 3, "an emptied filter is no filter");
    type_text(&mut s, "ana");
    assert_eq!(pids(&s).len(), 3, "text matches the user too");
}

#[test]
fn f_filters_to_the_selected_pid() {
    let mut s = state();
    s.update(Msg::from(Event::Sample(sample(0))));
    act(&mut s, &[Action::Down, Action::FilterSelected]);
    assert_eq!(s.screen.filter, Some(Filter::Pid(300)));
    assert_eq!(pids(&s), vec![300]);
}

#[test]
fn sort_cycles_through_the_columns() {
    let mut s = state();
    for k in 0..5 {
        s.update(Msg::from(Event::Sample(sample(k))));
    }
    act(&mut s, &[Action::CycleSort]);
    assert_eq!(s.screen.sort, Sort::Growth);
    assert_eq!(pids(&s)[0], 200, "the growing process first");
    act(&mut s, &[Action::CycleSort, Action::CycleSort]);
    assert_eq!(s.screen.sort, Sort::Pid);
    assert_eq!(pids(&s), vec![100, 200, 300]);
    act(&mut s, &[Action::CycleSort]);
    assert_eq!(s.screen.sort, Sort::Gpu);
    assert_eq!(pids(&s), vec![100, 300, 200]);
    act(&mut s, &[Action::CycleSort]);
    assert_eq!(s.screen.sort, Sort::DeviceMemory);
}

#[test]
fn pause_freezes_the_view_until_resumed() {
    let mut s = state();
    s.update(Msg::from(Event::Sample(sample(0))));
    act(&mut s, &[Action::TogglePause]);
    s.update(Msg::from(Event::Sample(sample(10))));
    let p200 = s
        .machine()
        .processes
        .values()
        .find(|t| t.key.pid == 200)
        .unwrap();
    assert_eq!(
        p200.sample.device_memory.get(),
        Some(GIB),
        "no update while paused"
    );
    act(&mut s, &[Action::TogglePause]);
    s.update(Msg::from(Event::Sample(sample(11))));
    let p200 = s
        .machine()
        .processes
        .values()
        .find(|t| t.key.pid == 200)
        .unwrap();
    assert_eq!(p200.sample.device_memory.get(), Some(GIB + 1100 * MIB));
}

#[test]
fn a_failure_logged_while_paused_is_an_alert_once_resumed() {
    let mut s = state();
    s.update(Msg::from(Event::Sample(sample(0))));
    act(&mut s, &[Action::TogglePause]);
    let mut failing = sample(1);
    let line = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 \
                has a total capacity of 79.18 GiB of which 1.00 GiB is free.";
    failing.failures = gpumon::oom::parse_all(line.as_bytes())
        .into_iter()
        .map(|p| p.into_failure(T0 + 1000, "finetune.log", Some(200)))
        .collect();
    s.update(Msg::from(Event::Sample(failing)));
    s.update(Msg::from(Event::Sample(sample(2))));
    assert!(
        s.machine().alerts.is_empty(),
        "a paused screen keeps what it shows"
    );
    act(&mut s, &[Action::TogglePause]);
    s.update(Msg::from(Event::Sample(sample(3))));
    let alerts: Vec<_> = s
        .machine()
        .alerts
        .iter()
        .map(|a| (a.pid, a.level, a.title.contains("2.00 GiB")))
        .collect();
    assert_eq!(
        alerts,
        vec![(Some(200), gpumon::model::Level::Failure, true)],
        "the failure logged during the pause is not lost"
    );
}

#[test]
fn focus_a_gpu_and_cycle_back_to_all() {
    let mut s = state();
    s.update(Msg::from(Event::Sample(sample(0))));
    act(&mut s, &[Action::FocusGpu(1)]);
    assert_eq!(pids(&s), vec![200]);
    act(&mut s, &[Action::FocusNext]);
    assert_eq!(s.screen.focus, None, "Tab past the last GPU shows all");
    act(&mut s, &[Action::FocusNext]);
    assert_eq!(pids(&s), vec![100, 300]);
    act(&mut s, &[Action::FocusGpu(7)]);
    assert_eq!(
        pids(&s),
        vec![100, 300],
        "a GPU that does not exist changes nothing"
    );
}

#[test]
fn reset_peaks_and_identity_by_start_time() {
    let mut s = state();
    s.update(Msg::from(Event::Sample(sample(5))));
    let mut smaller = sample(6);
    smaller.processes[1].device_memory = Reading::Value(GIB);
    s.update(Msg::from(Event::Sample(smaller.clone())));
    let peak = |s: &State| {
        s.machine()
            .processes
            .values()
            .find(|t| t.key.pid == 200)
            .unwrap()
            .peak
    };
    assert_eq!(peak(&s), Some(GIB + 500 * MIB));
    act(&mut s, &[Action::ResetPeaks]);
    assert_eq!(peak(&s), Some(GIB));

    // PID 200 reused by a new process: another start time, a new history.
    let mut reused = smaller;
    reused.at_ms += 1000;
    reused.processes[1].start_time = Reading::Value(1_763_900_000);
    s.update(Msg::from(Event::Sample(reused)));
    let tracks: Vec<_> = s
        .machine()
        .processes
        .values()
        .filter(|t| t.key.pid == 200)
        .collect();
    assert_eq!(
        tracks.len(),
        2,
        "the old one is kept as exited for a grace period"
    );
    let new = tracks.iter().find(|t| t.exited_ms.is_none()).unwrap();
    assert_eq!(new.history.len(), 1, "a reused PID starts a new history");
    assert_eq!(
        pids(&s).iter().filter(|p| **p == 200).count(),
        2,
        "both on screen, the old one as exited"
    );
}

/// A paste into the filter prompt is typed text (`x\nq` is `xq`, no Enter, no quit), and the
/// same paste with no prompt open is nothing.
#[test]
fn a_paste_is_text_in_the_prompt_and_nothing_outside() {
    use gpumon::input::map_paste;
    let mut s = state();
    s.update(Msg::from(Event::Sample(sample(0))));
    for a in map_paste("x\nq", s.screen.prompt.is_some()) {
        assert!(s.update(Msg::Action(a)).is_none(), "{a:?} did something");
    }
    assert_eq!(s.screen.prompt, None);
    act(&mut s, &[Action::FilterPrompt]);
    for a in map_paste("fine\ntune\x1b[2J", s.screen.prompt.is_some()) {
        assert!(s.update(Msg::Action(a)).is_none());
    }
    assert_eq!(s.screen.prompt.as_deref(), Some("finetune[2J"));
    act(&mut s, &[Action::PromptBackspace; 4]);
    act(&mut s, &[Action::PromptApply]);
    assert_eq!(pids(&s), [200]);
}
