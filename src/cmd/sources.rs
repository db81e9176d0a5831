//! The one place that builds real sources (NVML, /proc, log files, recordings on disk): every
//! other part of gpumon takes a `Factory` or a `Source` and never knows which.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Fail;
use super::given::{self, Wants};
use crate::kill::StartTimes;
use crate::logs::LogWatch;
use crate::run::no_gpu::NoGpu;
use crate::sampler::Factory;
use crate::source::Source;
use crate::source::events::EventFeed;
use crate::source::kmsg::KmsgEvents;
use crate::source::live::LiveSource;
use crate::source::nvml::NvmlReader;
use crate::source::nvml::events::NvmlEvents;
use crate::source::probe::dir::ProbeDirs;
use crate::source::probe::request::{ProbeRequests, Requests};
use crate::source::probe::{PoolReader, default_dir};
use crate::source::procfs::ProcReader;
use crate::source::ras::RasWatch;
use crate::source::ras::client::TcpRas;
use crate::source::replay::ReplaySource;

/// Start times read from /proc/PID/stat (as the samples read them), for the re-check before a
/// signal; `None` when signals are off.
pub(super) fn start_times(enabled: bool) -> Option<Arc<dyn StartTimes>> {
    enabled.then(|| Arc::new(ProcStartTimes) as Arc<dyn StartTimes>)
}

struct ProcStartTimes;

impl StartTimes for ProcStartTimes {
    fn start_time(&self, pid: u32) -> Option<u64> {
        crate::source::procfs::start_time(pid)
    }
}

pub(super) fn live_factory(logs: Vec<PathBuf>) -> Factory {
    Arc::new(move || {
        let gpu = NvmlReader::new()?;
        let host = ProcReader::new()?;
        let events = gpu_events(&gpu);
        let live = LiveSource::new(gpu, host, LogWatch::new(&logs))
            .with_pools(pool_reader())
            .with_events(events)
            .with_ras(ras_watch());
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
            Ok(gpu) => {
                let events = gpu_events(&gpu);
                Box::new(
                    LiveSource::new(gpu, host, watch)
                        .with_pools(pool_reader())
                        .with_events(events)
                        .with_ras(ras_watch()),
                ) as Box<dyn Source>
            }
            Err(e) => Box::new(
                LiveSource::new(NoGpu::new(e.to_string()), host, watch)
                    .with_pools(pool_reader())
                    .with_ras(ras_watch()),
            ),
        })
    })
}

/// NCCL's RAS service over TCP, asked while a distributed job runs.
fn ras_watch() -> RasWatch {
    RasWatch::new(Arc::new(TcpRas))
}

/// The GPUs' events: NVML's event wait (on `gpu`'s session) and the kernel log, each on a thread
/// of its own.
fn gpu_events(gpu: &NvmlReader) -> EventFeed {
    let feed = EventFeed::default();
    feed.listen(Box::new(NvmlEvents {
        nvml: gpu.session(),
    }));
    feed.listen(Box::new(KmsgEvents {
        path: PathBuf::from("/dev/kmsg"),
    }));
    feed
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

/// A recording to replay: its source, and the time of its last sample where that is cheap to
/// know (a plain file on disk).
pub(super) struct Replay {
    pub source: ReplaySource<Box<dyn BufRead + Send>>,
    pub last_at_ms: Option<u64>,
}

/// A recording given on the command line (a file, a pipe, `-`; plain, gzip or zstd), its header
/// and first sample read and checked; the rest is read as it is replayed. Anything else is
/// refused with what it is.
pub(super) fn open_replay(path: &Path) -> Result<Replay, Fail> {
    let input = given::open(path).map_err(Fail::usage)?;
    given::check(&input, Wants::Recording).map_err(Fail::usage)?;
    let last_at_ms = input.last_at_ms();
    let name = input.name.clone();
    let mut source =
        ReplaySource::read(&name, input.reader()).map_err(|e| Fail::usage(e.to_string()))?;
    source.first().map_err(|e| Fail::usage(e.to_string()))?;
    Ok(Replay { source, last_at_ms })
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
    Box::new(probe_dirs())
}

fn probe_dirs() -> ProbeDirs {
    let uid = rustix::process::getuid().as_raw();
    let root = rustix::process::geteuid().is_root();
    ProbeDirs::new(vec![probe_dir()], root, uid)
}

/// Requests to the probes of the directories gpumon reads (`None` when `on` is false).
pub(crate) fn requests(on: bool) -> Option<Arc<dyn Requests>> {
    on.then(|| {
        Arc::new(ProbeRequests::new(probe_dirs(), PathBuf::from("/proc"))) as Arc<dyn Requests>
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kill::{Outcome, send};
    use crate::screen::{Sig, SignalRequest};

    /// The real re-check on a real child: its start time is read, a request with another start
    /// time (what a reused PID looks like) is refused and leaves it running, and once it has
    /// exited nothing is signalled.
    #[test]
    fn a_reused_or_exited_pid_is_never_signalled() {
        let times = ProcStartTimes;
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        let start = times
            .start_time(pid)
            .expect("a running child has a start time");
        let req = |start_time| SignalRequest {
            pid,
            start_time,
            signal: Sig::Term,
        };
        assert_eq!(send(&times, req(start + 1)), Outcome::Reused);
        assert!(child.try_wait().unwrap().is_none(), "not signalled");
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(times.start_time(pid), None);
        assert_eq!(send(&times, req(start)), Outcome::Gone);
    }
}
