//! `gpumon run` end to end in tmux, without NVML (`GPUMON_NVML_LIB` points nowhere): the command
//! still runs, its log is followed and its failure shown, and gpumon exits with its status,
//! leaving the run's alerts on the terminal; the quit question stops it (`k`) or leaves it
//! running (`l`). Needs tmux (`.ci/run` installs it).

#[path = "common/tmux.rs"]
mod tmux;

use std::path::PathBuf;
use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant};

use tmux::Session;

const WAIT: Duration = Duration::from_secs(20);

/// `gpumon run ARGS` at 80x24 in the session's directory.
fn start(tag: &str, args: &str) -> Session {
    Session::start(&format!("run-{tag}"), &format!("run {args}"), (80, 24))
}

/// The run's log (the one file gpumon created in the session's directory).
fn run_log(s: &Session) -> PathBuf {
    let logs: Vec<PathBuf> = std::fs::read_dir(s.dir.path())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs[0].clone()
}

#[test]
fn without_nvml_the_log_is_followed_and_the_status_passed_on() {
    let oom = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/logs/demo-train-frag.log"
    );
    let s = start("status", &format!("-- sh -c 'cat {oom}; sleep 1; exit 3'"));
    let screen = s.wait_for(
        |t| t.contains("PyTorch OOM: fragmentation"),
        "the OOM alert",
    );
    assert!(
        screen.contains("no GPU readings: NVML library not found"),
        "{screen}"
    );
    assert!(screen.contains("log gpumon-run-sh-"), "{screen}");
    s.wait_for(|t| t.contains("exited with status 3"), "the command's end");
    s.keys(&["q"]);
    let stderr = s.assert_restored(3);
    assert!(stderr.contains("writes to gpumon-run-sh-"), "{stderr}");
    assert!(
        stderr.contains("sh -c cat exited with status 3"),
        "{stderr}"
    );
    let log = std::fs::read_to_string(run_log(&s)).unwrap();
    assert!(log.contains("Tried to allocate 512.00 MiB"), "{log}");
}

#[test]
fn the_runs_alerts_stay_on_the_terminal_once_the_screen_closes() {
    let oom = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/logs/demo-train-frag.log"
    );
    let s = start("report", &format!("-- sh -c 'cat {oom}; sleep 1; exit 3'"));
    s.wait_for(|t| t.contains("exited with status 3"), "the command's end");
    s.keys(&["q"]);
    s.assert_restored(3);
    let after = s.wait_for(|t| t.contains("remedy:"), "the alerts after the screen");
    assert!(
        after.contains("gpumon: 1 alert about sh -c cat"),
        "one block, its header:\n{after}"
    );
    assert!(after.contains("fragmentation: "), "the class:\n{after}");
    assert!(after.contains("evidence: asked 512.00 MiB"), "{after}");
    assert!(after.contains("PYTORCH_ALLOC_CONF"), "the remedy:\n{after}");

    // A run without alerts leaves nothing behind.
    let s = start("quiet", "-- sh -c 'exit 0'");
    s.wait_for(|t| t.contains("exited with status 0"), "the command's end");
    s.keys(&["q"]);
    s.assert_restored(0);
    assert!(!s.screen().contains("gpumon:"), "{}", s.screen());
}

#[test]
fn the_quit_question_cancels_then_k_stops_the_command() {
    let s = start("stop", "-- sleep 60");
    s.wait_for(|t| t.contains("log gpumon-run-sleep-"), "the run's header");
    s.keys(&["q"]);
    s.wait_for(
        |t| t.contains("sleep is still running: k stop it"),
        "the question",
    );
    s.keys(&["Escape"]);
    s.wait_for(|t| !t.contains("still running"), "the question closed");
    s.keys(&["q"]);
    s.wait_for(|t| t.contains("still running"), "the question again");
    s.keys(&["k"]);
    let stderr = s.assert_restored(143);
    assert!(stderr.contains("sleep killed by SIGTERM"), "{stderr}");
}

#[test]
fn l_leaves_the_command_running_with_its_output_in_the_log() {
    let s = start("leave", "-- sh -c 'sleep 1; echo later; exec sleep 60'");
    s.wait_for(|t| t.contains("log gpumon-run-sh-"), "the run's header");
    s.keys(&["q"]);
    s.wait_for(|t| t.contains("still running"), "the question");
    s.keys(&["l"]);
    let stderr = s.assert_restored(0);
    assert!(
        stderr.contains("is still running; its output goes to"),
        "{stderr}"
    );
    let pid: i32 = stderr
        .split("(pid ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {stderr}"));
    let log = run_log(&s);
    let start = Instant::now();
    while !std::fs::read_to_string(&log).unwrap().contains("later") {
        assert!(
            start.elapsed() < WAIT,
            "the command's output never reached the log"
        );
        sleep(Duration::from_millis(100));
    }
    assert!(
        PathBuf::from(format!("/proc/{pid}")).exists(),
        "it still runs"
    );
    // Stop the command this test started: its process group.
    Command::new("kill")
        .args(["-TERM", "--", &format!("-{pid}")])
        .status()
        .unwrap();
}
