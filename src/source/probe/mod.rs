//! The allocator probe's side in gpumon: the files the Python hook writes inside jobs
//! (`gpumon.probe/1`, docs/probe-format.md), read by a [`PoolReader`] and joined to the processes
//! NVML lists by (pid, start time) and GPU UUID.
//!
//! The real reader ([`dir::ProbeDirs`]) scans the per-user probe directories and trusts a file
//! only when it is a regular file of sane size, owned by the user the process runs as, well
//! formed and of the right version; anything else is ignored with a reason, said once.

pub mod dir;
pub mod file;
pub mod hook;
pub mod map_file;
mod maps;
pub mod request;

use std::collections::{HashMap, VecDeque};
use std::ffi::OsStr;
use std::path::PathBuf;

use crate::sample::pool_map::{AllocRecording, ProbeAnswer};
use crate::sample::{Pool, ProbeNews, ProcessSample, Reading};

/// The reason a process has no pool figures when nothing probed it.
pub const NOT_PROBED: &str = "not probed (start it under `gpumon run` or `gpumon probe env`)";

/// One framework's pool on one device, as a probe file reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevicePool {
    /// The framework's visible ordinal.
    pub index: u32,
    /// The physical GPU, NVML style (`GPU-…`), when the probe could tell.
    pub uuid: Option<String>,
    pub pool: Pool,
}

/// A probe file that passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeReport {
    pub pid: u32,
    /// Process start, Unix seconds (as /proc gives it to gpumon).
    pub start_time: u64,
    pub at_ms: u64,
    pub interval_ms: u64,
    /// Why the hook stopped, when it did.
    pub stopped: Option<String>,
    pub devices: Vec<DevicePool>,
    /// The last request the probe took (docs/memory-map-format.md).
    pub answer: Option<ProbeAnswer>,
    /// Whether it records allocation history; `None` where nothing can record.
    pub recording: Option<AllocRecording>,
    /// When it last wrote `<pid>.map.json`.
    pub map_at_ms: Option<u64>,
    /// The process's place in a distributed job as `torch.distributed` or JAX says it, once the
    /// job has initialised a process group (`docs/probe-format.md`).
    pub distributed: Option<crate::sample::Inside>,
    /// How the process ended (its last file, written at exit or after an uncaught exception).
    pub end: Option<crate::sample::ProcessEnd>,
    /// Where its main thread stands, while it has not moved for a while or gpumon asked.
    pub main_where: Option<crate::sample::MainWhere>,
}

impl ProbeReport {
    /// The pool figures for `p` (a process on one GPU), or why there are none.
    pub fn pool_for(&self, p: &ProcessSample, now_ms: u64) -> Reading<Pool> {
        if let Some(start) = p.start_time.get()
            && start.abs_diff(self.start_time) > 1
        {
            return Reading::na("its probe file is from an earlier process with this PID");
        }
        if let Some(why) = &self.stopped {
            return Reading::na(format!("the probe stopped: {why}"));
        }
        let stale_after = self.interval_ms.saturating_mul(3).max(5_000);
        let age = now_ms.saturating_sub(self.at_ms);
        if age > stale_after {
            return Reading::na(format!(
                "the probe's figures are stale (last written {}s ago)",
                age / 1000
            ));
        }
        let by_uuid = self
            .devices
            .iter()
            .find(|d| d.uuid.as_deref() == Some(p.gpu_uuid.as_str()));
        // A probe that could not name the GPU is still usable when there is nothing to choose.
        let only = match self.devices.as_slice() {
            [d] if d.uuid.is_none() => Some(d),
            _ => None,
        };
        match by_uuid.or(only) {
            Some(d) => Reading::Value(d.pool.clone()),
            None if self.devices.is_empty() => {
                Reading::na("probed, but no framework has initialised a GPU yet")
            }
            None => Reading::na("probed, but its framework reports no pool on this GPU"),
        }
    }
}

/// One look at the probe files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProbeScan {
    pub reports: HashMap<u32, ProbeReport>,
    /// Files ignored since the last scan, each with its reason (each file and reason said once).
    pub notices: Vec<String>,
    /// New maps, answers, recording states, ends and main-thread places (only what changed
    /// since the last scan).
    pub news: Vec<ProbeNews>,
}

/// Where probe figures come from (the probe directories in production, a script in tests).
pub trait PoolReader: Send {
    fn scan(&mut self, now_ms: u64) -> ProbeScan;
}

/// A scripted reader for tests: hands out the scans it was given, then empty ones.
pub struct ScriptedPools {
    scans: VecDeque<ProbeScan>,
}

impl ScriptedPools {
    pub fn new(scans: impl IntoIterator<Item = ProbeScan>) -> Self {
        ScriptedPools {
            scans: scans.into_iter().collect(),
        }
    }
}

impl PoolReader for ScriptedPools {
    fn scan(&mut self, _now_ms: u64) -> ProbeScan {
        self.scans.pop_front().unwrap_or_default()
    }
}

/// The directory a user's probe files go to: `$XDG_RUNTIME_DIR/gpumon/probe` when that is a
/// directory, else `/tmp/gpumon-<uid>/probe`.
pub fn default_dir(uid: u32, xdg_runtime_dir: Option<&OsStr>) -> PathBuf {
    match xdg_runtime_dir.map(PathBuf::from) {
        Some(run) if run.is_absolute() && run.is_dir() => run.join("gpumon").join("probe"),
        _ => PathBuf::from(format!("/tmp/gpumon-{uid}/probe")),
    }
}

#[cfg(test)]
mod end_tests;
#[cfg(test)]
mod tests;
