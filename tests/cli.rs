//! The command line from outside: exit statuses, one-line errors, bad values and bad files.

use std::io::Write;

use assert_cmd::Command;

fn gpumon() -> Command {
    let mut c = Command::cargo_bin("gpumon").unwrap();
    // Make "no NVML" deterministic, whatever machine runs the tests.
    c.env("GPUMON_NVML_LIB", "/nonexistent/libnvidia-ml.so.1");
    c
}

/// Runs and returns (status, stderr).
fn fails(args: &[&str]) -> (i32, String) {
    let out = gpumon().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn nonsense_durations_are_usage_errors() {
    for args in [
        &["--interval", "0"][..],
        &["--interval", "-5s"],
        &["--interval", "1e99h"],
        &["--interval", "10ms"],
        &["--history", "0s"],
        &["record", "x.ndjson", "--duration", "forever"],
    ] {
        let (code, err) = fails(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        // One line, then clap's usage as a hint.
        let lines: Vec<&str> = err.lines().collect();
        assert!(
            err.starts_with("gpumon: ") && lines.len() == 2 && lines[1].starts_with("usage: "),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn unknown_and_conflicting_flags_are_usage_errors() {
    assert_eq!(fails(&["--frobnicate"]).0, 2);
    assert_eq!(fails(&["--demo", "--replay", "x.ndjson"]).0, 2);
    let (code, err) = fails(&["--speed", "2"]);
    assert_eq!(code, 2, "--speed needs --replay or --demo");
    assert!(err.contains("--replay") && err.contains("--demo"), "{err}");
}

#[test]
fn the_demo_takes_a_speed() {
    // Accepted: what stops it is only the missing terminal.
    let (code, err) = fails(&["--demo", "--speed", "10"]);
    assert_eq!(code, 2);
    assert!(err.contains("not a terminal"), "{err}");
}

#[test]
fn no_nvml_exits_2_with_the_reason_and_the_demo_hint() {
    let (code, err) = fails(&["snapshot"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 2, "{err}");
    assert!(err.contains("NVML"), "{err}");
    assert!(err.contains("gpumon --demo"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ndjson");
    let (code, err) = fails(&["record", path.to_str().unwrap(), "--duration", "1s"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("gpumon --demo"), "{err}");
    assert!(!path.exists(), "no half-made recording is left");
}

#[test]
fn a_bad_recording_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let demo = gpumon::source::replay::demo();
    let first_line = demo.split(|b| *b == b'\n').next().unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", vec![], "empty file"),
        ("foreign", b"{\"hello\": 1}\n".to_vec(), "line 1"),
        ("newer", b"{\"schema\": \"gpumon.recording/9\"}\n".to_vec(), "not supported"),
        ("binary", b"\x00\xff\xfe\x01\x02 garbage\n".to_vec(), "this is a binary file (35 % of its first 14 bytes are not text), not a gpumon recording"),
        ("types", [first_line, b"\n{\"at_ms\": \"soon\", \"gpus\": [], \"processes\": []}\n"].concat(), "line 2"),
        ("negative", [first_line, b"\n{\"at_ms\": 1, \"gpus\": [{\"uuid\": \"u\", \"index\": 0, \"name\": \"n\", \"pci_bus_id\": null, \"status\": {\"state\": \"ok\"}, \"memory\": {\"total\": -5, \"used\": 0, \"free\": 0, \"reserved\": null}, \"utilization\": null, \"temperature_c\": null, \"power_mw\": null}], \"processes\": []}\n"].concat(), "line 2"),
        ("nan", [first_line, b"\n{\"at_ms\": NaN, \"gpus\": [], \"processes\": []}\n"].concat(), "line 2"),
        // A recording cut off mid-line is replayed up to the cut (tests/input_paths.rs).
    ];
    for (name, bytes, expect) in cases {
        let path = dir.path().join(format!("{name}.ndjson"));
        std::fs::File::create(&path)
            .unwrap()
            .write_all(&bytes)
            .unwrap();
        for args in [
            vec!["--replay", path.to_str().unwrap()],
            vec!["snapshot", "--replay", path.to_str().unwrap()],
        ] {
            let (code, err) = fails(&args);
            assert_eq!(code, 2, "{name} {args:?}: {err}");
            assert!(err.contains(expect), "{name}: {err}");
            assert!(
                err.contains(&format!("{name}.ndjson")),
                "{name}: the error names the file: {err}"
            );
            assert_eq!(err.lines().count(), 1, "{name}: one line: {err}");
        }
    }
}

#[test]
fn the_screen_needs_a_terminal() {
    let (code, err) = fails(&["--demo"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a terminal"), "{err}");
}

#[test]
fn diff_refuses_what_is_not_a_snapshot_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let real = "tests/fixtures/snapshots/h100-jax-prealloc.json";
    for (name, bytes) in [
        ("empty.json", &b""[..]),
        ("text.json", b"hello"),
        ("other.json", b"{\"schema\": \"something/1\"}"),
        ("newer.json", b"{\"schema\": \"gpumon.snapshot/5\"}"),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let (code, err) = fails(&["diff", real, path.to_str().unwrap()]);
        assert_eq!(code, 2, "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(err.contains(name), "{name}: names the file: {err}");
    }
    let (code, err) = fails(&[
        "diff",
        real,
        "tests/fixtures/snapshots/h100-jax-noprealloc.json",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn explain_reads_real_logs_and_fails_on_unreadable_ones() {
    let out = gpumon()
        .args(["explain", "tests/fixtures/logs/torch-fill-frag.log"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    // A line alone is never sure of fragmentation (issue 39).
    assert!(text.contains("fragmentation (likely)"), "{text}");
    assert!(text.contains("expandable_segments:True"), "{text}");
    let (code, err) = fails(&["explain", "/nonexistent/train.log"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("/nonexistent/train.log"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("ok.log");
    std::fs::write(&clean, "epoch 1 loss 0.3\n").unwrap();
    let out = gpumon()
        .args(["explain", clean.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "no allocation failures found\n"
    );
}

#[test]
fn snapshot_of_a_recording_writes_a_private_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snap.json");
    let out = gpumon()
        .args([
            "snapshot",
            "--replay",
            "assets/demo.ndjson",
            "-o",
            path.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(doc["schema"], "gpumon.snapshot/4");
    let classes: Vec<&str> = doc["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["class"].as_str())
        .collect();
    assert!(
        classes.contains(&"fragmentation") && classes.contains(&"device-full"),
        "{classes:?}"
    );
}

/// The systemd unit in `assets/` starts a command line gpumon accepts, with a token because it
/// listens beyond loopback.
#[test]
fn the_systemd_unit_runs_a_serve_command_gpumon_accepts() {
    use clap::Parser;
    let unit = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/assets/systemd/gpumon-serve.service"
    ))
    .unwrap();
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("an ExecStart line");
    let mut args = exec.split_whitespace();
    assert_eq!(args.next(), Some("/usr/local/bin/gpumon"));
    let args: Vec<&str> = args.collect();
    let cli = gpumon::cli::Cli::try_parse_from(std::iter::once("gpumon").chain(args.clone()))
        .unwrap_or_else(|e| panic!("{exec}: {e}"));
    assert!(matches!(cli.command, Some(gpumon::cli::Command::Serve(_))));
    assert!(args.contains(&"--token-file"), "{exec}");
    assert!(unit.contains("Restart=on-failure"));
}
