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
        assert!(
            err.starts_with("gpumon: ") && err.lines().count() == 1,
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn unknown_and_conflicting_flags_are_usage_errors() {
    assert_eq!(fails(&["--frobnicate"]).0, 2);
    assert_eq!(fails(&["--demo", "--replay", "x.ndjson"]).0, 2);
    assert_eq!(fails(&["--speed", "2"]).0, 2, "--speed needs --replay");
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
    let demo = gpumon::source::replay::DEMO;
    let first_line = demo.split(|b| *b == b'\n').next().unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", vec![], "empty file"),
        ("foreign", b"{\"hello\": 1}\n".to_vec(), "line 1"),
        ("newer", b"{\"schema\": \"gpumon.recording/2\"}\n".to_vec(), "not supported"),
        ("binary", b"\x00\xff\xfe garbage\n".to_vec(), "line 1"),
        ("types", [first_line, b"\n{\"at_ms\": \"soon\", \"gpus\": [], \"processes\": []}\n"].concat(), "line 2"),
        ("negative", [first_line, b"\n{\"at_ms\": 1, \"gpus\": [{\"uuid\": \"u\", \"index\": 0, \"name\": \"n\", \"pci_bus_id\": null, \"status\": {\"state\": \"ok\"}, \"memory\": {\"total\": -5, \"used\": 0, \"free\": 0, \"reserved\": null}, \"utilization\": null, \"temperature_c\": null, \"power_mw\": null}], \"processes\": []}\n"].concat(), "line 2"),
        ("nan", [first_line, b"\n{\"at_ms\": NaN, \"gpus\": [], \"processes\": []}\n"].concat(), "line 2"),
        ("truncated", [first_line, b"\n{\"at_ms\": 1, \"gpus\": ["].concat(), "line 2"),
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
