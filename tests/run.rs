//! `gpumon run` from outside, without a terminal: it refuses before starting anything; and its
//! screen (filtered to the command, the quit question, no NVML, the command's end) rendered
//! from states built through `State::update`.

use assert_cmd::Command;
use gpumon::input::Action;
use gpumon::model::{Config, Event};
use gpumon::oom::failure::Failure;
use gpumon::screen::{Filter, Msg, State};
use gpumon::screen::{RunEnd, RunInfo};
use gpumon::source::scripted::build::{self, GIB};
use gpumon::source::{Framework, MachineInfo, Reading, Sample};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const T0: u64 = 1_763_812_987_000;
const LOG: &str = "/home/ana/gpumon-run-python3-20251122T120307Z.log";

fn gpumon() -> Command {
    let mut c = Command::cargo_bin("gpumon").unwrap();
    c.env("GPUMON_NVML_LIB", "/nonexistent/libnvidia-ml.so.1");
    c
}

#[test]
fn without_a_terminal_nothing_is_started() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let script = format!(
        "touch {}; echo 'CUDA out of memory. Tried to allocate 2.00 GiB.'; exit 3",
        marker.display()
    );
    let out = gpumon()
        .args(["run", "--log-dir"])
        .arg(dir.path())
        .args(["--", "sh", "-c", &script])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not a terminal"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!marker.exists(), "the command must not run");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no log");
}

#[test]
fn bad_uses_are_usage_errors() {
    for args in [
        &["run"][..],
        &["run", "--log-dir"],
        &["--demo", "run", "--", "true"],
    ] {
        let out = gpumon().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

fn state(machine: MachineInfo) -> State {
    let mut s = State::new(Config::new(1000, 60_000));
    s.screen.filter = Some(Filter::Run {
        pid: 7100,
        log: LOG.into(),
    });
    s.screen.run = Some(RunInfo::new(
        7100,
        "python3 train.py".into(),
        "gpumon-run-python3-20251122T120307Z.log".into(),
    ));
    s.update(Msg::from(Event::Started(machine)));
    s
}

fn draw(state: &State) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal.draw(|f| gpumon::view::render(f, state)).unwrap();
    terminal
}

/// The command's two workers write to its log and show; another user's job does not.
#[test]
fn screen_filtered_to_the_command_asks_before_quitting() {
    let mut s = state(build::machine());
    let g = build::gpu(0, 80 * GIB, 0, 0);
    let mut processes = Vec::new();
    for (pid, command) in [
        (7102, "python3 train.py --rank 0"),
        (7103, "python3 train.py --rank 1"),
    ] {
        let mut p = build::process(pid, &g, 20 * GIB, Framework::Pytorch, command);
        p.log = Reading::Value(vec![LOG.into()]);
        processes.push(p);
    }
    processes.push(build::process(
        5000,
        &g,
        30 * GIB,
        Framework::Jax,
        "python serve.py",
    ));
    s.update(Msg::from(Event::Sample(Sample {
        at_ms: T0,
        gpus: vec![g],
        processes,
        ..Default::default()
    })));
    assert_eq!(
        s.screen.rows.iter().map(|k| k.pid).collect::<Vec<_>>(),
        [7102, 7103]
    );
    s.update(Msg::Action(Action::Quit));
    insta::assert_snapshot!("run_asking_80x24", draw(&s).backend());
}

#[test]
fn screen_without_nvml_follows_the_log_and_shows_the_end() {
    let mut s = state(MachineInfo {
        no_gpu: Some(
            "NVML library not found (libnvidia-ml.so.1 missing): no NVIDIA driver installed".into(),
        ),
        ..build::machine()
    });
    let message = "CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 79.18 GiB of which 93.44 MiB is free. Of the allocated memory 4.03 GiB is allocated by PyTorch, and 4.93 GiB is reserved by PyTorch but unallocated.";
    let failure = gpumon::oom::parse_all(message.as_bytes())
        .remove(0)
        .into_failure(T0, LOG, None);
    let failures: Vec<Failure> = vec![failure];
    s.update(Msg::from(Event::Sample(Sample {
        at_ms: T0,
        gpus: Vec::new(),
        failures,
        ..Default::default()
    })));
    assert_eq!(s.update(Msg::RunEnded(RunEnd::Exited(3))), None);
    insta::assert_snapshot!("run_no_nvml_ended_80x24", draw(&s).backend());
}
