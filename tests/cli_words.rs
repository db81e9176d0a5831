//! Commands and words a newcomer meets (issue 41): `gpumon man DIR` creates DIR; an NVML library
//! named by `GPUMON_NVML_LIB` is named in the error, and one that is no NVML is not called too
//! old; a usage error ends with the command's usage; the man page's exit status for a file of
//! the wrong kind is the binary's.

use std::time::Duration;

use assert_cmd::Command;

fn gpumon(nvml: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::cargo_bin("gpumon")
        .unwrap()
        .env("GPUMON_NVML_LIB", nvml)
        .timeout(Duration::from_secs(60))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const NONE: &str = "/nonexistent/libnvidia-ml.so.1";

#[test]
fn man_creates_the_folder_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let man1 = dir.path().join("share/man/man1");
    let (code, _, err) = gpumon(NONE, &["man", man1.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(man1.join("gpumon.1").is_file() && man1.join("gpumon-explain.1").is_file());
    // A folder that cannot be made is a clear error.
    let file = dir.path().join("plain");
    std::fs::write(&file, b"x").unwrap();
    let (code, _, err) = gpumon(NONE, &["man", file.join("man1").to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.starts_with("gpumon: cannot create "), "{err}");
}

#[test]
fn the_nvml_library_set_is_named_and_a_foreign_one_is_no_nvml() {
    let (code, _, err) = gpumon("/nonexistent/x", &["snapshot"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("gpumon: NVML library not found: /nonexistent/x, named by GPUMON_NVML_LIB"),
        "{err}"
    );
    assert!(!err.contains("libnvidia-ml.so.1 missing"), "{err}");
    // A real shared library that is not NVML: this process's libc.
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let libc = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.contains("/libc.so"))
        .expect("libc mapped");
    let (code, _, err) = gpumon(libc, &["snapshot"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with(&format!("gpumon: {libc} is not an NVML library")),
        "{err}"
    );
    assert!(!err.contains("too old"), "{err}");
}

#[test]
fn a_usage_error_ends_with_the_usage() {
    let (code, _, err) = gpumon(NONE, &["explain"]);
    assert_eq!(code, 2);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        [
            "gpumon: the following required arguments were not provided: <FILE>...",
            "usage: gpumon explain <FILE>... (gpumon explain --help says more)"
        ]
    );
    let (code, _, err) = gpumon(NONE, &["--frobnicate"]);
    assert_eq!(code, 2);
    assert!(
        err.lines().last().unwrap().starts_with("usage: gpumon"),
        "{err}"
    );
}

#[test]
fn the_man_page_says_the_status_a_wrong_kind_gets() {
    let snapshot = "tests/fixtures/snapshots/h100-jax-prealloc.json";
    let log = "tests/fixtures/logs/cupy-pool-limit.log";
    let (explain, _, _) = gpumon(NONE, &["explain", snapshot]);
    let (replay, _, _) = gpumon(NONE, &["snapshot", "--replay", log]);
    assert_eq!((explain, replay), (1, 2));
    let (_, page, _) = gpumon(NONE, &["man"]);
    let page = page.replace("\\-", "-");
    let status = page.split(".SH \"EXIT STATUS\"").nth(1).unwrap();
    let one = status
        .split("\n.TP\n")
        .find(|s| s.contains("\\fB1\\fR"))
        .unwrap();
    let two = status
        .split("\n.TP\n")
        .find(|s| s.contains("\\fB2\\fR"))
        .unwrap();
    assert!(
        one.contains(
            "gpumon explain: a file given could not be read, or is of a kind it does not read"
        ),
        "{one}"
    );
    assert!(
        two.contains("a file of the wrong kind for --replay, snapshot --replay or diff"),
        "{two}"
    );
}
