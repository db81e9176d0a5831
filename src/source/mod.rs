//! Where samples come from: the `Source` trait, its errors, and the readers behind the live source.
//!
//! Real sources (NVML, /proc) are built only by `main.rs`; tests use the scripted and replay sources.

pub mod container;
pub mod environ;
pub mod events;
pub mod framework;
pub mod kmsg;
pub mod launcher;
pub mod live;
pub mod nvml;
pub mod period;
pub mod probe;
pub mod procfs;
pub mod ras;
pub mod replay;
pub mod scripted;

pub use crate::sample::{
    Framework, GpuSample, GpuStatus, MachineInfo, Memory, MigInstance, MigMemory, ProcessKind,
    ProcessSample, ProcessUtil, Reading, Sample,
};

/// Why a source could not start or could not give a sample.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// NVML could not start; the message says why in words a person understands.
    #[error("{0}")]
    Unavailable(String),
    /// A recording could not be read.
    #[error(transparent)]
    Recording(#[from] crate::recording::RecordingError),
    /// A replay has no more samples.
    #[error("end of recording")]
    Ended,
    /// A looping replay (the demo) reached its end and starts again from its start: lap `n`
    /// (2, 3, …); the next sample is the first of that lap.
    #[error("the replay starts again (lap {0})")]
    Lapped(u32),
}

/// Anything that can describe the machine and take samples of it.
///
/// `machine` is called once, off the async reactor (NVML start-up can take seconds);
/// `sample` is then called once a tick, also off the reactor.
pub trait Source: Send {
    fn machine(&mut self) -> Result<MachineInfo, SourceError>;
    fn sample(&mut self) -> Result<Sample, SourceError>;
    /// The source's clock, for what it reports besides samples (a failure's time): the wall
    /// clock of a live machine; a replay's is its recording's (the time of its latest sample),
    /// so nothing on a replay's screen is measured against the wall clock.
    fn now_ms(&self) -> u64 {
        crate::clock::unix_ms()
    }
}

/// A GPU process as the GPU driver lists it, before /proc is consulted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuProcess {
    pub pid: u32,
    pub gpu_uuid: String,
    pub kind: ProcessKind,
    pub device_memory: Reading<u64>,
    pub util: Reading<ProcessUtil>,
    /// The MIG GPU and compute instance it runs in; `None` without MIG.
    pub gpu_instance_id: Option<u32>,
    pub compute_instance_id: Option<u32>,
}

/// What the GPU driver says in one tick.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GpuReadout {
    pub gpus: Vec<GpuSample>,
    pub processes: Vec<GpuProcess>,
}

/// The GPU side of the live source (NVML in production, a fake in tests).
pub trait GpuReader: Send {
    /// Driver, NVML and CUDA versions; fails when the driver cannot be reached at all.
    fn versions(&mut self) -> Result<MachineInfo, SourceError>;
    /// Every GPU and its processes; a GPU that fails is `GpuStatus::Lost`, not an error.
    fn read(&mut self) -> Result<GpuReadout, SourceError>;
}

/// What /proc says about one process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostProcess {
    pub start_time: Reading<u64>,
    pub user: Reading<String>,
    pub command: Reading<String>,
    pub vms: Reading<u64>,
    pub rss: Reading<u64>,
    pub framework: Reading<Framework>,
    pub settings: Reading<std::collections::BTreeMap<String, String>>,
    pub container: Reading<crate::sample::Placement>,
    /// Its place in a distributed job, from its launcher's variables (`launcher::rank`).
    pub rank: Option<crate::sample::Rank>,
    /// Where its NCCL RAS service would be, from its initial environment (the default address
    /// where that could not be read).
    pub ras: ras::RasAddr,
}

/// What a fake host says of a process: the host side of a sample's process (tests' readers).
#[cfg(test)]
impl HostProcess {
    pub fn of_sample(p: crate::sample::ProcessSample, ras: ras::RasAddr) -> Self {
        HostProcess {
            start_time: p.start_time,
            user: p.user,
            command: p.command,
            vms: p.vms,
            rss: p.rss,
            framework: p.framework,
            settings: p.settings,
            container: p.container,
            rank: p.rank,
            ras,
        }
    }
}

/// The host side of the live source (/proc in production, a fake in tests).
pub trait HostReader: Send {
    /// Host name and kernel.
    fn host(&mut self) -> (String, Option<String>);
    /// Looks up only these PIDs; a PID that /proc lacks is absent from the result.
    fn lookup(&mut self, pids: &[u32]) -> std::collections::HashMap<u32, HostProcess>;
}
