//! Nonsense command lines, and a full disk where the CLI takes a path or writes stdout.

use std::process::Stdio;

use gpumon::source::replay::demo;

use super::{fails_with, file, gpumon};

#[test]
fn nonsense_durations_are_one_line_usage_errors() {
    for (args, says) in [
        (&["--interval", "0"][..], "must be more than zero"),
        (&["--interval", "0s"], "must be more than zero"),
        (&["--interval", "-5s"], "\"-5s\" is not a duration"),
        (&["--interval=-5s"], "\"-5s\" is not a duration"),
        (&["--interval", "1e99h"], "\"1e99h\" is not a duration"),
        (&["--interval", "99999999999999999999s"], "not a duration"),
        (&["--interval", "10ms"], "at least 100ms"),
        (&["--interval", "2h"], "at most 1h"),
        (&["--interval", ""], "not a duration"),
        (&["--history", "-5s"], "\"-5s\" is not a duration"),
        (&["--history", "1e99h"], "not a duration"),
        (&["--history", "9999w"], "longer than a week"),
        (
            &["--replay", "x", "--speed", "NaN"],
            "the speed must be a number",
        ),
        (
            &["--replay", "x", "--speed", "-1"],
            "the speed must be a number",
        ),
        (
            &["record", "x.ndjson", "--duration", "-5s"],
            "not a duration",
        ),
        (&["record", "x.ndjson", "--duration", "0"], "more than zero"),
        (
            &["record", "x.ndjson", "--interval", "1e99h"],
            "not a duration",
        ),
    ] {
        let err = fails_with(2, args);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn unknown_and_conflicting_flags_are_one_line_usage_errors() {
    for (args, says) in [
        (&["--frobnicate"][..], "unexpected argument '--frobnicate'"),
        (
            &["--intervl", "1s"],
            "tip: a similar argument exists: '--interval'",
        ),
        (&["diff", "--frobnicate", "a", "b"], "unexpected argument"),
        (&["diff", "a.json"], "required"),
        (&["frobnicate"], "unrecognized subcommand"),
        (&["snapshot", "--format", "yaml"], "invalid value 'yaml'"),
        (&["--demo", "--replay", "x.ndjson"], "cannot be used with"),
        (&["--speed", "2"], "--replay"),
        (
            &["--interval", "5s", "record", "x.ndjson"],
            "cannot be used with",
        ),
        (
            &["--demo", "diff", "a.json", "b.json"],
            "cannot be used with",
        ),
        (&["--filter", "python", "snapshot"], "cannot be used with"),
    ] {
        let err = fails_with(2, args);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn help_and_version_still_go_to_stdout_with_status_0() {
    for arg in ["--help", "--version"] {
        let out = gpumon().arg(arg).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert!(!out.stdout.is_empty() && out.stderr.is_empty());
    }
}

#[test]
fn a_full_disk_is_reported_not_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let demo = file(dir.path(), "demo.ndjson", demo());
    let err = fails_with(1, &["snapshot", "--replay", &demo, "-o", "/dev/full"]);
    assert!(err.contains("/dev/full: No space left on device"), "{err}");
    assert!(std::fs::metadata("/dev/full").is_ok_and(|m| {
        use std::os::unix::fs::FileTypeExt;
        m.file_type().is_char_device()
    }));
    for args in [
        vec!["snapshot", "--replay", &demo],
        vec!["snapshot", "--replay", &demo, "-o", "-", "--format", "text"],
    ] {
        let full = std::fs::File::create("/dev/full").unwrap();
        let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("gpumon"))
            .args(&args)
            .stdout(Stdio::from(full))
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("No space left on device"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}
