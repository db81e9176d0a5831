//! The alerts the real binary's `gpumon explain --format json` raises replaying one recording,
//! oldest first (NVML pointed nowhere: a replay never asks a GPU).

use std::ffi::OsStr;
use std::process::Command;

use serde_json::Value;

/// The alerts `explain` raised replaying the recording at `path`; its exit must be a success.
pub fn replay_alerts(path: impl AsRef<OsStr>) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_gpumon"))
        .env("GPUMON_NVML_LIB", "/nonexistent/libnvidia-ml.so.1")
        .args(["explain", "--format", "json"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["recordings"][0]["alerts"].as_array().unwrap().clone()
}
