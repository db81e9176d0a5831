//! Bad input of issue 6: broken recordings and snapshots through the public readers and the
//! CLI, nonsense command lines, and a full disk. None panics; each error is one line on stderr,
//! exit status 2 (1 for a full disk), naming the file and, where there is one, the line.

mod cli;
mod recordings;
mod snapshots;

use std::path::Path;

use assert_cmd::Command;

/// The binary, with NVML made unreachable whatever machine runs the tests.
pub fn gpumon() -> Command {
    let mut c = Command::cargo_bin("gpumon").unwrap();
    c.env("GPUMON_NVML_LIB", "/nonexistent/libnvidia-ml.so.1");
    c
}

/// Runs `gpumon ARGS`, expects `status`, one line on stderr (a usage error's followed by its one
/// usage line: issue 41) and no panic; returns the error.
#[track_caller]
pub fn fails_with(status: i32, args: &[&str]) -> String {
    let out = gpumon().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(status), "{args:?}: {err}");
    // One line; a usage error adds clap's usage of the command as a hint.
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines.len() == 1 || (lines.len() == 2 && lines[1].starts_with("usage: ")),
        "{args:?}: one line: {err}"
    );
    assert!(err.starts_with("gpumon: "), "{args:?}: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{err}"
    );
    err
}

/// Writes `bytes` to `dir/name` and returns the path as text.
pub fn file(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path.to_str().unwrap().to_string()
}

/// A file of `len` bytes, `head` then zeros, without writing the zeros (sparse).
pub fn sparse(dir: &Path, name: &str, head: &[u8], len: u64) -> String {
    let path = file(dir, name, head);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len)
        .unwrap();
    path
}

pub const TWO_GIB: u64 = 2 << 30;
