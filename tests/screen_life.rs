//! Screen tests of a process's life: an OOM'd process that exited stays selectable with its
//! cause, growth reads flat once a jump has passed, the alerts follow the GPU in focus, and the
//! signal dialog names the process and asks first. Rendered at 80x24 and 120x40 and compared
//! with reviewed insta snapshots.

use gpumon::input::{Action, Sig};
use gpumon::model::{Config, Event};
use gpumon::screen::{Command, Msg, Pane, SignalRequest, State};
use gpumon::source::scripted::build::{GIB, MIB, gpu, machine, process};
use gpumon::source::{Framework, Sample};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Modifier;

/// 2025-11-22 12:01:40 UTC.
const T0: u64 = 1_763_812_900_000;
const TICKS: u64 = 40;
/// pid 873 runs out of memory at this tick and exits two ticks later.
const OOM_TICK: u64 = 20;

/// Tick `k`: on GPU0 a PyTorch job (873) that grows, fails to allocate and exits, and a JAX job
/// (4312) that jumped once at tick 3 and then stayed flat; on GPU1 a TensorFlow server (4521)
/// whose allocation fails at tick 25.
fn sample(k: u64) -> Sample {
    let total = 143_771 * MIB;
    let (g0, g1) = (gpu(0, total, 0, 0), gpu(1, total, 0, 0));
    let mut processes = vec![
        process(
            4312,
            &g0,
            if k < 3 { 2 * GIB } else { 14 * GIB },
            Framework::Jax,
            "python train.py",
        ),
        process(4521, &g1, 3 * GIB, Framework::Tensorflow, "python serve.py"),
    ];
    if k <= OOM_TICK + 1 {
        let grown = 20 * GIB + k * 4 * GIB;
        processes.push(process(
            873,
            &g0,
            grown,
            Framework::Pytorch,
            "python finetune.py",
        ));
    }
    let used = |uuid: &str| {
        let procs: u64 = processes
            .iter()
            .filter(|p| p.gpu_uuid == uuid)
            .filter_map(|p| p.device_memory.get())
            .sum();
        procs + GIB
    };
    let (u0, u1) = (used(&g0.uuid), used(&g1.uuid));
    let failure = |line: &str, log: &str, pid| {
        let parsed = gpumon::oom::parse_all(line.as_bytes()).remove(0);
        parsed.into_failure(T0 + k * 1000, log, Some(pid))
    };
    let failures = match k {
        OOM_TICK => vec![failure(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 139.81 GiB of which 2.00 GiB is free. Including non-PyTorch memory, this process has 100.00 GiB memory in use. Of the allocated memory 80.00 GiB is allocated by PyTorch, and 18.00 GiB is reserved by PyTorch but unallocated.",
            "/srv/log/873.out",
            873,
        )],
        25 => vec![failure(
            "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[8192,8192] and type float on /job:localhost/replica:0/task:0/device:GPU:1 by allocator GPU_1_bfc",
            "/srv/log/4521.out",
            4521,
        )],
        _ => Vec::new(),
    };
    Sample {
        at_ms: T0 + k * 1000,
        gpus: vec![gpu(0, total, u0, 615 * MIB), gpu(1, total, u1, 615 * MIB)],
        processes,
        failures,
        ..Default::default()
    }
}

fn state() -> State {
    let mut s = State::new(Config {
        color: true,
        ..Config::new(1000, 60_000)
    });
    s.update(Msg::from(Event::Started(machine())));
    for k in 0..TICKS {
        s.update(Msg::from(Event::Sample(sample(k))));
    }
    s
}

fn act(s: &mut State, actions: &[Action]) -> Option<Command> {
    actions.iter().fold(None, |_, a| s.update(Msg::Action(*a)))
}

fn text(state: &State, w: u16, h: u16) -> (Terminal<TestBackend>, String) {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| gpumon::view::render(f, state)).unwrap();
    let text = format!("{}", terminal.backend());
    (terminal, text)
}

/// Snapshots `state` at 80x24 and 120x40; the 120x40 text for further checks.
#[track_caller]
fn check(name: &str, state: &State) -> String {
    let mut wide = String::new();
    for (w, h) in [(80, 24), (120, 40)] {
        let (terminal, text) = text(state, w, h);
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), terminal.backend());
        wide = text;
    }
    wide
}

#[test]
fn an_exited_oomed_process_stays_selectable_with_its_cause() {
    let mut s = state();
    let exited = s
        .machine()
        .processes
        .values()
        .find(|t| t.key.pid == 873)
        .expect("kept after its exit");
    assert!(exited.exited_ms.is_some());
    // It no longer counts toward GPU0's bar: the processes segment is 4312's alone.
    let g0 = s.machine().gpus_in_order()[0].segments.unwrap();
    assert_eq!(g0.processes, 14 * GIB);
    assert_eq!(
        s.screen.rows.last().map(|k| k.pid),
        Some(873),
        "exited last"
    );

    // From the alert about it, Enter opens the alert and Enter again selects it.
    act(&mut s, &[Action::TogglePane, Action::Down]);
    let (_, alerts) = text(&s, 120, 40);
    assert!(
        alerts.contains("pid 873 exited 17s ago, OOM: leak"),
        "{alerts}"
    );
    act(&mut s, &[Action::Enter]);
    let (_, open) = text(&s, 120, 40);
    assert!(
        open.contains("pid 873 exited 17s ago, OOM: leak: Enter selects it"),
        "{open}"
    );
    act(&mut s, &[Action::Enter]);
    assert_eq!(s.screen.pane, Pane::Processes);
    assert!(s.screen.alert_open.is_none(), "the alert closed");
    assert_eq!(s.selected_process().map(|t| t.key.pid), Some(873));
    let wide = check("exited_oom_selected", &s);
    let (terminal, _) = text(&s, 120, 40);
    let buf = terminal.backend().buffer();
    let line = |y| -> String { (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect() };
    let row = (0..buf.area.height)
        .find(|&y| line(y).contains("[exited"))
        .expect("the exited row");
    let pid_cell = (0..buf.area.width)
        .map(|x| &buf[(x, row)])
        .find(|c| c.symbol() == "8")
        .unwrap();
    assert!(
        pid_cell.modifier.contains(Modifier::DIM),
        "dimmed: {pid_cell:?}"
    );
    assert_ne!(pid_cell.fg, pid_cell.bg, "readable when selected");
    // At 120 columns the exited row says when and why in full, across the columns it has
    // nothing current for (growth, utilisation), and still names its command.
    assert!(
        line(row).contains("[exited 17s ago, OOM: leak] python"),
        "{}",
        line(row)
    );
    // The detail pane says it whole too.
    assert!(wide.contains("exited 17s ago, OOM: leak"), "{wide}");
    assert!(wide.contains("remedy"), "the failure's remedy: {wide}");
}

#[test]
fn a_jump_then_flat_reads_flat_with_its_last_step() {
    let mut s = state();
    let t = s.machine().processes.values().find(|t| t.key.pid == 4312);
    assert_eq!(t.and_then(|t| t.growth), Some(0.0));
    act(&mut s, &[Action::FilterPrompt]);
    for c in "4312".chars() {
        act(&mut s, &[Action::PromptChar(c)]);
    }
    act(&mut s, &[Action::PromptApply]);
    let (_, wide) = text(&s, 120, 40);
    assert!(wide.contains("GROW/10s"), "{wide}");
    assert!(
        wide.contains("growth flat over 10s, last change +12G 36s ago"),
        "{wide}"
    );
    // The filter narrows the alerts too: none is about 4312.
    assert!(
        wide.contains("alerts (0), +2 hidden by the filter"),
        "{wide}"
    );
}

#[test]
fn alerts_follow_the_gpu_in_focus() {
    let mut s = state();
    assert_eq!(s.screen.alert_rows.len(), s.machine().alerts.len());
    act(&mut s, &[Action::FocusGpu(1), Action::TogglePane]);
    let shown: Vec<_> = gpumon::screen::alerts::shown(&s.screen, s.machine()).collect();
    assert!(!shown.is_empty());
    let g1 = &s.machine().gpus_in_order()[1].sample.uuid;
    assert!(
        shown
            .iter()
            .all(|a| a.gpu_uuid.as_ref().is_none_or(|g| g == g1))
    );
    let hidden = s.machine().alerts.len() - shown.len();
    let wide = check("alerts_focus", &s);
    assert!(wide.contains(&format!("+{hidden} on other GPUs")), "{wide}");
    act(&mut s, &[Action::FocusNext]);
    assert_eq!(s.screen.alerts_hidden, None, "Tab past the last shows all");
}

#[test]
fn the_signal_dialog_names_the_process_and_asks_first() {
    let mut s = state();
    act(&mut s, &[Action::Up, Action::Up, Action::Up]);
    assert_eq!(s.selected_process().map(|t| t.key.pid), Some(4312));
    assert_eq!(act(&mut s, &[Action::Signal]), None);
    let wide = check("signal_dialog", &s);
    for part in ["signal pid 4312?", "python train.py", "GPU0 14G", "SIGKILL"] {
        assert!(wide.contains(part), "{part}: {wide}");
    }
    assert_eq!(act(&mut s, &[Action::Down]), None, "other keys do nothing");
    assert_eq!(s.selected_process().map(|t| t.key.pid), Some(4312));
    let sent = act(&mut s, &[Action::SendSignal(Sig::Term)]);
    let want = SignalRequest {
        pid: 4312,
        start_time: 1_763_800_000 + 4312,
        signal: Sig::Term,
    };
    assert_eq!(sent, Some(Command::Signal(want)));
    assert!(s.screen.signal.is_none());
    act(&mut s, &[Action::Signal, Action::Escape]);
    assert!(s.screen.signal.is_none(), "Esc cancels");
}

#[test]
fn signals_are_refused_when_off_or_for_an_exited_process() {
    let mut s = state();
    s.screen.signals_off = Some("the demo replays a recording".into());
    act(&mut s, &[Action::Signal]);
    assert!(s.screen.signal.is_none());
    assert_eq!(
        s.screen.status.as_deref(),
        Some("signals are off: the demo replays a recording")
    );
    s.screen.signals_off = None;
    act(&mut s, &[Action::Up, Action::Up, Action::Up]);
    let last = s.screen.rows.len();
    for _ in 0..last {
        act(&mut s, &[Action::Down]);
    }
    assert_eq!(s.selected_process().map(|t| t.key.pid), Some(873));
    act(&mut s, &[Action::Signal]);
    assert!(s.screen.signal.is_none());
    assert_eq!(
        s.screen.status.as_deref(),
        Some("pid 873 has already exited")
    );
}

#[test]
fn keep_exited_is_configurable() {
    let mut s = State::new(Config {
        keep_exited_ms: 5_000,
        ..Config::new(1000, 60_000)
    });
    s.update(Msg::from(Event::Started(machine())));
    for k in 0..TICKS {
        s.update(Msg::from(Event::Sample(sample(k))));
    }
    assert!(s.machine().processes.values().all(|t| t.key.pid != 873));
}
