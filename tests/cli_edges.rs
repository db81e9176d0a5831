//! The command line's small edges from outside (issue 35): `--interval` with a replay, a
//! duration's error in one clean sentence, `serve` without a GPU saying so before it says it
//! serves, `snapshot --replay`'s text saying the recording ended, and `gpumon run`'s alerts
//! left on the terminal (the end to end test of that is in `e2e_run.rs`).

use assert_cmd::Command;

fn gpumon() -> Command {
    let mut c = Command::cargo_bin("gpumon").unwrap();
    // "No NVML" on every machine that runs the tests.
    c.env("GPUMON_NVML_LIB", "/nonexistent/libnvidia-ml.so.1");
    c
}

/// (status, stdout, stderr).
fn run(args: &[&str]) -> (i32, String, String) {
    let out = gpumon().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/demo.ndjson");

#[test]
fn a_replay_keeps_its_recorded_interval_and_says_so() {
    for args in [
        &["--demo", "--interval", "5s"][..],
        &["--replay", DEMO, "--interval", "5s"],
        &["--demo", "--speed", "2", "--interval", "500ms"],
        &["serve", "--demo", "--interval", "5s"],
        &["serve", "--replay", DEMO, "--interval", "2s"],
    ] {
        let (code, _, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains("a replay keeps the interval it was recorded at")
                && err.contains("--speed"),
            "{args:?}: {err}"
        );
    }
    // Without --interval the demo goes as far as the missing terminal.
    let (code, _, err) = run(&["--demo"]);
    assert_eq!(code, 2);
    assert!(err.contains("not a terminal"), "{err}");
}

/// `--log` with a replay or the demo (on the screen or in `serve`) is refused in words, never
/// silently ignored (issue 40).
#[test]
fn a_log_with_a_replay_is_refused_not_ignored() {
    for args in [
        &["--demo", "--log", "/tmp/train.log"][..],
        &["--replay", DEMO, "--log", "/tmp/train.log"],
        &["serve", "--demo", "--log", "/tmp/train.log"],
        &["serve", "--replay", DEMO, "--log", "/tmp/train.log"],
    ] {
        let (code, _, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains("--log /tmp/train.log follows a log while the GPUs are read live")
                && err.contains("gpumon explain /tmp/train.log"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn a_bad_duration_is_one_clean_sentence() {
    for (value, why) in [
        ("1x", "\"x\" is not a unit of time"),
        ("-5s", "it is not a number followed by a unit"),
        ("", "it is empty"),
    ] {
        let (code, _, err) = run(&["--interval", value]);
        assert_eq!(code, 2, "{value:?}: {err}");
        assert!(err.contains(why), "{value:?}: {err}");
        assert!(err.contains("try 500ms, 1s, 10m or 2h"), "{err}");
        // No list of humantime's units, no parenthesis left open.
        assert!(!err.contains("months") && !err.contains("years"), "{err}");
        assert_eq!(err.matches('(').count(), err.matches(')').count(), "{err}");
    }
}

#[test]
fn serve_without_a_gpu_says_so_before_it_would_serve() {
    let (code, _, err) = run(&["serve", "--listen", "127.0.0.1:0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("NVML library not found"), "{err}");
    assert!(
        err.contains("hint: `gpumon serve --demo` serves a real recording without a GPU"),
        "{err}"
    );
    assert!(!err.contains("serving"), "nothing was served: {err}");
}

#[test]
fn a_finished_replays_snapshot_says_the_recording_ended() {
    let (code, out, err) = run(&["snapshot", "--replay", DEMO, "--format", "text"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("source ended (the end of the recording)"),
        "{out}"
    );
    assert!(!out.contains("source running"), "{out}");
}
