//! The one place that builds real sources (NVML, /proc, log files, recordings on disk): every
//! other part of gpumon takes a `Factory` or a `Source` and never knows which.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Fail;
use crate::logs::LogWatch;
use crate::recording;
use crate::run::no_gpu::NoGpu;
use crate::sampler::Factory;
use crate::source::Source;
use crate::source::live::LiveSource;
use crate::source::nvml::NvmlReader;
use crate::source::procfs::ProcReader;
use crate::source::replay::ReplaySource;

pub(super) fn live_factory(logs: Vec<PathBuf>) -> Factory {
    Arc::new(move || {
        let gpu = NvmlReader::new()?;
        let host = ProcReader::new()?;
        Ok(Box::new(LiveSource::new(gpu, host, LogWatch::new(&logs))) as Box<dyn Source>)
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
            Ok(gpu) => Box::new(LiveSource::new(gpu, host, watch)) as Box<dyn Source>,
            Err(e) => Box::new(LiveSource::new(NoGpu::new(e.to_string()), host, watch)),
        })
    })
}

pub(super) fn replay_factory<R: BufRead + Send + 'static>(source: ReplaySource<R>) -> Factory {
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

/// A recording on disk (zstd-compressed when named `*.zst`), its header and first sample read
/// and checked; the rest is read as it is replayed.
pub(super) fn open_replay(path: &Path) -> Result<ReplaySource<Box<dyn BufRead + Send>>, Fail> {
    let name = path.display().to_string();
    let input = recording::file::open(path).map_err(|e| Fail::usage(format!("{name}: {e}")))?;
    let mut source = ReplaySource::read(&name, input).map_err(|e| Fail::usage(e.to_string()))?;
    source.first().map_err(|e| Fail::usage(e.to_string()))?;
    Ok(source)
}
