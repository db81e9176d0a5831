//! One machine's data and how samples change it: GPUs, processes with their history rings,
//! alerts, the source's state. Pure: no clock (each event carries its time), no I/O, and no
//! analysis (the pipeline runs analysis on the machine and hands the alerts back).

pub mod alert;
pub mod health;
pub mod history;
pub mod job_failure;
pub mod jobs;
pub mod machine;
pub mod maps;
pub mod nccl;
pub mod pool_history;
pub mod process;
pub mod tiers;
pub mod units;

use crate::sample::Reading;
pub use alert::{Alert, Level};
pub use history::{Point, Ring};
pub use job_failure::{Ending, Group, JobFailure, RankEvent};
pub use jobs::{Imbalance, Job, RankRow};
pub use machine::{Event, GpuTrack, Machine, Segments, SourceState, processes_on};
pub use maps::MapTrack;
pub use pool_history::PoolHistory;
pub use process::{Change, HOST_MEMORY_GONE, HostMemory, ProbeOom, ProcKey, ProcessTrack};
pub use tiers::{Bucket, Resolution, TIERS, Tier, Tiers};

/// How long an exited process is kept (on screen, for analysis and snapshots) before it is
/// dropped, unless `Config::keep_exited_ms` says otherwise (`--keep-exited`).
pub const DEFAULT_KEEP_EXITED_MS: u64 = 5 * 60_000;
/// Window of the growth rate: short, so a process that stopped growing reads as flat soon.
pub const GROWTH_WINDOW_MS: u64 = 10_000;
/// Alerts kept; older ones are dropped and counted.
pub const MAX_ALERTS: usize = 200;

/// Settings fixed at start.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub interval_ms: u64,
    pub history_ms: u64,
    /// Draw without Unicode blocks.
    pub ascii: bool,
    pub color: bool,
    /// Replay speed when the samples come from a recording.
    pub replay_speed: Option<f64>,
    /// How long an exited process stays (`--keep-exited`).
    pub keep_exited_ms: u64,
}

impl Config {
    /// Plain settings: colour off, Unicode drawing, not a replay.
    pub fn new(interval_ms: u64, history_ms: u64) -> Self {
        Config {
            interval_ms,
            history_ms,
            ascii: false,
            color: false,
            replay_speed: None,
            keep_exited_ms: DEFAULT_KEEP_EXITED_MS,
        }
    }

    /// Points each history ring holds.
    pub fn ring_capacity(&self) -> usize {
        usize::try_from(self.history_ms / self.interval_ms.max(1)).unwrap_or(usize::MAX) + 1
    }
}

/// `Reading<u64>` helper for views: the value or the reason.
pub fn value_or_reason(r: &Reading<u64>) -> Result<u64, &str> {
    match r {
        Reading::Value(v) => Ok(*v),
        Reading::Unavailable(reason) => Err(reason),
    }
}
