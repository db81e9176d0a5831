//! The one place that builds real sources (NVML, /proc, log files, recordings on disk): every
//! other part of gpumon takes a `Factory` or a `Source` and never knows which.

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Fail;
use crate::logs::LogWatch;
use crate::run::no_gpu::NoGpu;
use crate::sampler::Factory;
use crate::source::Source;
use crate::source::live::LiveSource;
use crate::source::nvml::NvmlReader;
use crate::source::probe::dir::ProbeDirs;
use crate::source::probe::{PoolReader, default_dir};
use crate::source::procfs::ProcReader;
use crate::source::replay::ReplaySource;

pub(super) fn live_factory(logs: Vec<PathBuf>) -> Factory {
    Arc::new(move || {
        let gpu = NvmlReader::new()?;
        let host = ProcReader::new()?;
        let live = LiveSource::new(gpu, host, LogWatch::new(&logs)).with_pools(pool_reader());
        Ok(Box::new(live) as Box<dyn Source>)
    })
}

/// `gpumon run`'s source: NVML and /proc, or without NVML no GPU (and why), so the command's log
/// is still followed. The first source takes `first`, made before the command started; one
/// rebuilt after failures follows the logs from their end.
pub(super) fn run_factory(first: LogWatch, logs: Vec<PathBuf>) -> Factory {
    let first = std::sync::Mutex::new(Some(first));
    Arc::new(move || {
        let host = ProcReader::new()?;
        let watch = first
            .lock()
            .ok()
            .and_then(|mut w| w.take())
            .unwrap_or_else(|| LogWatch::new(&logs));
        Ok(match NvmlReader::new() {
            Ok(gpu) => Box::new(LiveSource::new(gpu, host, watch).with_pools(pool_reader()))
                as Box<dyn Source>,
            Err(e) => Box::new(
                LiveSource::new(NoGpu::new(e.to_string()), host, watch).with_pools(pool_reader()),
            ),
        })
    })
}

pub(super) fn replay_factory(source: ReplaySource) -> Factory {
    let cell = std::sync::Mutex::new(Some(source));
    Arc::new(move || {
        let taken = cell.lock().ok().and_then(|mut c| c.take());
        taken
            .map(|s| Box::new(s) as Box<dyn Source>)
            .ok_or_else(|| {
                crate::source::SourceError::Unavailable("the replay cannot restart".into())
            })
    })
}

pub(super) fn open_replay(path: &Path) -> Result<ReplaySource, Fail> {
    let file =
        std::fs::File::open(path).map_err(|e| Fail::usage(format!("{}: {e}", path.display())))?;
    ReplaySource::read(&path.display().to_string(), BufReader::new(file), false)
        .map_err(|e| Fail::usage(e.to_string()))
}

/// The user's probe directory: `GPUMON_PROBE_DIR` when it is an absolute path, else the
/// per-user default.
pub(super) fn probe_dir() -> PathBuf {
    match std::env::var_os("GPUMON_PROBE_DIR").map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => dir,
        _ => default_dir(
            rustix::process::getuid().as_raw(),
            std::env::var_os("XDG_RUNTIME_DIR").as_deref(),
        ),
    }
}

/// The probe files of this user's jobs; root also reads every user's.
fn pool_reader() -> Box<dyn PoolReader> {
    let uid = rustix::process::getuid().as_raw();
    let root = rustix::process::geteuid().is_root();
    Box::new(ProbeDirs::new(vec![probe_dir()], root, uid))
}
