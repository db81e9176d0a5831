//! Snapshots: one JSON document (`gpumon.snapshot/4`) of what the screen shows, what the filter
//! hides and the history behind it; its text form, safe writing, reading back, and `gpumon diff`.
//!
//! The types here are the document (DTOs), separate from `State`: unavailable readings are
//! `null` and their reason goes into the object's `unavailable` map; bytes are integers; times
//! are RFC 3339 (UTC), except history points, which carry `at_ms` (ms since the Unix epoch).
//! `assets/snapshot.schema.json` describes the same document.

mod build;
pub mod diff;
pub mod jobs;
mod lines;
pub mod logs;
pub mod maps;
mod pool;
mod read;
mod restore;
pub mod text;
pub mod tiers;
pub mod timeline;
mod write;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

pub use crate::model::Point;
pub use crate::sample::{Framework, ProcessKind};
pub use lines::WIDTH;
pub use pool::{PoolDoc, PoolHistoryDoc, PoolTiersDoc};
pub use read::{MAX_BYTES, parse, read, read_from};
pub use tiers::TierDoc;
pub use write::{file_name, write_atomic, write_to_dir};

/// The schema this gpumon writes and reads.
pub const SCHEMA: &str = "gpumon.snapshot/4";
/// Earlier versions this gpumon still reads (4 added each process's `rank`, 3 coarse tiers,
/// maps and health, 2 each process's `pool` and `container`).
pub const OLDER: &[&str] = &[
    "gpumon.snapshot/3",
    "gpumon.snapshot/2",
    "gpumon.snapshot/1",
];

/// Reasons of unavailable fields, keyed by field name (`memory.reserved` for nested ones).
pub type Unavailable = BTreeMap<String, String>;

/// A whole snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    pub schema: String,
    /// When it was taken, RFC 3339 UTC with milliseconds.
    pub taken_at: String,
    /// The same instant, milliseconds since the Unix epoch.
    pub taken_at_ms: u64,
    pub gpumon_version: String,
    pub machine: Machine,
    pub view: View,
    /// In NVML index order.
    pub gpus: Vec<Gpu>,
    /// The table's rows in screen order, then those the filter or focus hides, then exited ones.
    pub processes: Vec<Process>,
    /// Newest first.
    pub alerts: Vec<AlertDoc>,
    /// Older alerts dropped to keep the list bounded.
    pub alerts_dropped: u64,
    /// The distributed jobs among the processes, by id, each with its ranks side by side
    /// (absent without any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<jobs::JobDoc>,
    /// Probed processes' block maps (absent without any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maps: Vec<maps::MapDoc>,
    /// The followed logs gpumon was reading behind their writers (absent when none was).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub logs_behind: Vec<logs::LogBehindDoc>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    pub host: Option<String>,
    pub kernel: Option<String>,
    pub driver_version: Option<String>,
    pub nvml_version: Option<String>,
    /// CUDA driver API version, e.g. "13.0".
    pub cuda_version: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unavailable: Unavailable,
}

/// How the screen was set up when the snapshot was taken.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct View {
    pub interval_ms: u64,
    pub history_ms: u64,
    pub source: SourceDoc,
    pub last_sample_at: Option<String>,
    pub paused: bool,
    /// `null`: no filter.
    pub filter: Option<FilterDoc>,
    pub sort: SortDoc,
    /// UUID of the GPU the table is narrowed to; `null`: all GPUs.
    pub focus: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unavailable: Unavailable,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case", deny_unknown_fields)]
pub enum SourceDoc {
    Starting,
    Running,
    Failing { since: String, reason: String },
    Ended,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FilterDoc {
    Pid(u32),
    /// Lower-case text matched against command and user.
    Text(String),
    /// `gpumon run`'s command and the processes writing its log (absolute path).
    Run {
        pid: u32,
        log: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SortDoc {
    DeviceMemory,
    Growth,
    Vms,
    Pid,
    Gpu,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case", deny_unknown_fields)]
pub enum GpuState {
    Ok,
    Lost { since: String, reason: String },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gpu {
    pub index: u32,
    pub uuid: String,
    pub name: String,
    pub pci_bus_id: Option<String>,
    pub status: GpuState,
    pub memory: Option<GpuMemory>,
    pub utilization_percent: Option<u32>,
    pub temperature_c: Option<u32>,
    pub power_mw: Option<u32>,
    /// Processes on this GPU whose device memory NVML could not give (not in `memory.processes`).
    pub processes_without_memory: u64,
    /// Used memory over the history window, oldest first.
    pub used_history: Vec<Point>,
    /// Used memory over days: the coarse tiers, finest first (absent in a compact snapshot and
    /// in older ones).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub used_tiers: Vec<TierDoc>,
    /// MIG instances when MIG is on; absent when off.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mig: Vec<MigDoc>,
    /// Memory health (ECC mode and errors, remapped rows, retired pages), each `null` with its
    /// reason in its own `unavailable`; absent where not read and in older snapshots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<crate::sample::Health>,
    /// Its Xid events since gpumon started watching; absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xid: Option<XidDoc>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unavailable: Unavailable,
}

/// A GPU's Xid events: how many, and the last one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XidDoc {
    pub count: u64,
    /// The last one's code; `null` when NVML did not know it.
    pub last_code: Option<u64>,
    pub last_at: String,
}

/// One MIG instance of a GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigDoc {
    /// "MIG-…", as CUDA_VISIBLE_DEVICES names it.
    pub uuid: String,
    /// e.g. "1g.10gb".
    pub profile: String,
    pub gpu_instance_id: u32,
    pub compute_instance_id: u32,
    /// Its GPU instance's memory, bytes; null with the reason in `unavailable.memory`.
    pub memory_total: Option<u64>,
    pub memory_used: Option<u64>,
    /// Running processes NVML attributes to its GPU instance.
    pub processes: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unavailable: Unavailable,
}

/// Device memory in bytes; `reserved + used + free = total` with NVML v2.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuMemory {
    pub total: u64,
    /// NVML v2: excludes `reserved`; NVML v1 (reserved `null`): includes it.
    pub used: u64,
    pub free: u64,
    /// Driver/firmware reserved memory.
    pub reserved: Option<u64>,
    /// Sum of the listed processes' device memory.
    pub processes: u64,
    /// `used - processes`, at least 0: memory not attributed to a listed process.
    pub other: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Process {
    pub pid: u32,
    pub gpu_uuid: String,
    pub kind: ProcessKind,
    pub started_at: Option<String>,
    pub user: Option<String>,
    pub command: Option<String>,
    pub framework: Option<Framework>,
    pub device_memory: Option<u64>,
    /// Highest device memory seen (since first seen or the last reset).
    pub peak: Option<u64>,
    pub vms: Option<u64>,
    pub rss: Option<u64>,
    /// Device memory growth over the last 10 s (`model::GROWTH_WINDOW_MS`), bytes per second;
    /// 0 when device memory did not change in that window.
    pub growth_bytes_per_s: Option<i64>,
    /// Memory-related variables of the initial environment (name -> value).
    pub settings: Option<BTreeMap<String, String>>,
    /// The files its stdout/stderr go to, followed for failures (absent in older snapshots).
    #[serde(default)]
    pub log: Option<Vec<String>>,
    /// Container, pod or job it runs in, short form (`k8s:3f2a…/trainer`, `slurm:48211.0`,
    /// `docker:9c1e…`); absent when none or not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// Its place in a distributed job (job id, launcher, rank, world size, …); absent when it is
    /// no rank of one, and in snapshots before `gpumon.snapshot/4`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<crate::sample::Rank>,
    /// The allocator pool on this GPU as the probe reports it; absent without the probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<PoolDoc>,
    /// SM, memory-controller, encoder and decoder utilisation, percent; absent in snapshots
    /// made before it existed.
    #[serde(default)]
    pub util: Option<crate::sample::ProcessUtil>,
    /// The MIG GPU and compute instance it runs in; absent without MIG.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_instance_id: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_instance_id: Option<u32>,
    /// A row of the table (not hidden by the filter or focus, not exited).
    pub shown: bool,
    pub selected: bool,
    pub first_seen_at: String,
    /// `null`: still running.
    pub exited_at: Option<String>,
    /// Device memory over the history window, oldest first.
    pub history: Vec<Point>,
    /// Device memory over days: the coarse tiers, finest first (absent in a compact snapshot
    /// and in older ones).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history_tiers: Vec<TierDoc>,
    /// The allocator pool over the history window; absent without the probe (and in snapshots
    /// made before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_history: Option<PoolHistoryDoc>,
    /// VMS and RSS as last read, when `vms`/`rss` are null because the process's address space
    /// is gone (it exited or is exiting); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_memory_last: Option<HostMemoryDoc>,
    /// How it ended, as its probe recorded it (docs/probe-format.md `end`); absent while it
    /// runs, without the probe, and when it ended without a record (a signal, `os._exit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<crate::sample::ProcessEnd>,
    /// Where its main thread stands while its probe reports it (unmoved for a while, or asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stuck: Option<crate::sample::MainWhere>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unavailable: Unavailable,
}

/// Host memory as last read before the process's address space went away.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostMemoryDoc {
    pub vms: u64,
    pub rss: Option<u64>,
    /// When it was read (RFC 3339).
    pub read_at: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LevelDoc {
    Failure,
    Suspected,
    /// Information: threatens nothing (absent from documents before it existed).
    Info,
    Notice,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertDoc {
    pub at: String,
    pub level: LevelDoc,
    pub class: String,
    pub confidence: Option<String>,
    pub gpu_uuid: Option<String>,
    pub pid: Option<u32>,
    pub title: String,
    pub evidence: Vec<String>,
    pub remedy: Option<String>,
    /// The distributed job it is about (a `jobs` id), when it concerns a rank of one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
}

impl Snapshot {
    /// Pretty JSON, newline-terminated.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec_pretty(self).unwrap_or_else(|e| {
            unreachable!("a snapshot has string keys and finite floats, so it serializes: {e}")
        });
        out.push(b'\n');
        out
    }

    /// The GPU with this UUID.
    pub fn gpu(&self, uuid: &str) -> Option<&Gpu> {
        self.gpus.iter().find(|g| g.uuid == uuid)
    }
}

/// Why a snapshot could not be written or read; each message is one line naming the file.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {size} bytes; a snapshot is at most {max} MiB", path.display(), max = MAX_BYTES >> 20)]
    TooLarge { path: PathBuf, size: u64 },
    #[error("{}: empty file, not a gpumon snapshot", path.display())]
    Empty { path: PathBuf },
    #[error("{}: not JSON: {what}", path.display())]
    NotJson { path: PathBuf, what: String },
    #[error("{}: not a gpumon snapshot ({what})", path.display())]
    NotSnapshot { path: PathBuf, what: String },
    #[error("{}: schema {found:?} is newer than this gpumon reads ({SCHEMA}); use a newer gpumon", path.display())]
    Newer { path: PathBuf, found: String },
    #[error("{}: invalid {schema} document: {what}", path.display())]
    Invalid {
        path: PathBuf,
        schema: String,
        what: String,
    },
}

/// Last second RFC 3339 can write with a four-digit year.
const MAX_SECS: u64 = 253_402_300_799;

/// RFC 3339 UTC with milliseconds, e.g. "2026-11-22T12:03:07.000Z".
pub fn time_ms(ms: u64) -> String {
    let d = Duration::from_millis(ms).min(Duration::from_secs(MAX_SECS));
    humantime::format_rfc3339_millis(UNIX_EPOCH + d).to_string()
}

/// RFC 3339 UTC to the second, e.g. "2026-11-22T12:03:07Z".
pub fn time_s(secs: u64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(secs.min(MAX_SECS)))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_and_never_panic() {
        assert_eq!(time_ms(1_763_813_000_123), "2025-11-22T12:03:20.123Z");
        assert_eq!(time_s(0), "1970-01-01T00:00:00Z");
        assert_eq!(time_s(u64::MAX), "9999-12-31T23:59:59Z");
        assert_eq!(time_ms(u64::MAX), "9999-12-31T23:59:59.000Z");
    }
}
