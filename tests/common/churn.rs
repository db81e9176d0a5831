//! A recording of PID churn written to a temporary directory: `samples` samples on one GPU, each
//! listing `per_sample` processes never seen before (every one gone by the next sample), as a
//! host running many short jobs records. scripts/bench_pid_churn.py writes the same shape at
//! the issue's scale (300 x 2,000) and measures it.
#![allow(dead_code, reason = "each test file uses the part it needs")]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub const UUID: &str = "GPU-e91a5d01-eed0-4321-a3ac-2714a59b27b8";
const GIB: u64 = 1 << 30;
const T0: u64 = 1_795_319_012_000;

fn header() -> String {
    r#"{"schema":"gpumon.recording/1","gpumon_version":"0.1.0","machine":{"host":"churn","kernel":"6.8","driver_version":"580.159.04","nvml_version":"13.580.159.04","cuda_version":"13.0"},"interval_ms":1000}"#
        .to_string()
}

/// One sample at `at` listing `pids`.
pub fn sample(at: u64, pids: impl Iterator<Item = u64>) -> String {
    let mut procs = String::new();
    let mut used = 0u64;
    for pid in pids {
        let device = 16u64 << 20;
        used += device;
        if !procs.is_empty() {
            procs.push(',');
        }
        let _ = write!(
            procs,
            r#"{{"pid":{pid},"gpu_uuid":"{UUID}","kind":"compute","device_memory":{device},"start_time":{},"user":"u","command":"python3 job.py --task {pid}","vms":{},"rss":{},"framework":"pytorch","settings":{{}}}}"#,
            at / 1000,
            8 * GIB,
            GIB / 2
        );
    }
    let total = (80 * GIB).max(used + GIB);
    format!(
        r#"{{"at_ms":{at},"gpus":[{{"uuid":"{UUID}","index":0,"name":"NVIDIA H100 80GB HBM3","pci_bus_id":"00000000:00:06.0","status":{{"state":"ok"}},"memory":{{"total":{total},"used":{used},"free":{},"reserved":503316480}},"utilization":50,"temperature_c":40,"power_mw":200000}}],"processes":[{procs}]}}"#,
        total - used
    )
}

/// Writes the churn recording into `dir`; its path.
pub fn recording(dir: &Path, samples: u64, per_sample: u64) -> PathBuf {
    let path = dir.join(format!("churn-{samples}x{per_sample}.ndjson"));
    let mut text = header();
    text.push('\n');
    for i in 0..samples {
        let first = 100_000 + i * per_sample;
        text.push_str(&sample(T0 + i * 1000, first..first + per_sample));
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    path
}

/// A recording of one sample listing `n` processes from `first_pid` on.
pub fn one_sample(dir: &Path, name: &str, first_pid: u64, n: u64) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!("{}\n{}\n", header(), sample(T0, first_pid..first_pid + n)),
    )
    .unwrap();
    path
}
