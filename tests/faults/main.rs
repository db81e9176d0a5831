//! Fault injection: each fault of issue 6 injected through the source traits (fake `GpuReader`s
//! and `HostReader`s behind the real `LiveSource`, sources behind the real sampler), through
//! `State::update`, the app loop and the file writers. No GPU, no sleeps: tokio time is paused.

mod events;
mod files;
mod gpu;
mod procs;
mod sampler;

use std::collections::{BTreeMap, HashMap};

use gpumon::logs::LogWatch;
use gpumon::model::{Config, Event};
use gpumon::screen::{Msg, State};
use gpumon::source::live::LiveSource;
use gpumon::source::scripted::build;
use gpumon::source::{
    Framework, GpuProcess, GpuReader, GpuReadout, GpuSample, HostProcess, HostReader, MachineInfo,
    ProcessKind, ProcessUtil, Reading, Source, SourceError,
};

/// A GPU driver whose answer at each tick (0, 1, ...) is scripted.
pub struct FakeGpu<F> {
    tick: usize,
    read: F,
}

impl<F: FnMut(usize) -> Result<GpuReadout, SourceError> + Send> GpuReader for FakeGpu<F> {
    fn versions(&mut self) -> Result<MachineInfo, SourceError> {
        Ok(build::machine())
    }

    fn read(&mut self) -> Result<GpuReadout, SourceError> {
        self.tick += 1;
        (self.read)(self.tick - 1)
    }
}

/// /proc as scripted: the tick and the PIDs asked about give what it "finds".
pub struct FakeHost<F> {
    tick: usize,
    lookup: F,
}

impl<F: FnMut(usize, &[u32]) -> HashMap<u32, HostProcess> + Send> HostReader for FakeHost<F> {
    fn host(&mut self) -> (String, Option<String>) {
        ("fake-host".into(), None)
    }

    fn lookup(&mut self, pids: &[u32]) -> HashMap<u32, HostProcess> {
        self.tick += 1;
        (self.lookup)(self.tick - 1, pids)
    }
}

/// The real live source over scripted driver and /proc answers.
pub fn live<G, H>(gpu: G, host: H) -> LiveSource<FakeGpu<G>, FakeHost<H>>
where
    G: FnMut(usize) -> Result<GpuReadout, SourceError> + Send,
    H: FnMut(usize, &[u32]) -> HashMap<u32, HostProcess> + Send,
{
    LiveSource::new(
        FakeGpu { tick: 0, read: gpu },
        FakeHost {
            tick: 0,
            lookup: host,
        },
        LogWatch::new(&[]),
    )
}

/// /proc that knows every PID it is asked about, started at `1000 + pid`.
pub fn all_found(_tick: usize, pids: &[u32]) -> HashMap<u32, HostProcess> {
    pids.iter()
        .map(|&p| (p, host(1000 + u64::from(p))))
        .collect()
}

/// A process as NVML lists it.
pub fn listed(pid: u32, gpu: &GpuSample, bytes: u64) -> GpuProcess {
    GpuProcess {
        pid,
        gpu_uuid: gpu.uuid.clone(),
        kind: ProcessKind::Compute,
        device_memory: Reading::Value(bytes),
        util: Reading::Value(ProcessUtil::default()),
        gpu_instance_id: None,
        compute_instance_id: None,
    }
}

/// A process as /proc shows it, every field readable.
pub fn host(start_time: u64) -> HostProcess {
    HostProcess {
        start_time: Reading::Value(start_time),
        user: Reading::Value("ana".into()),
        command: Reading::Value("python train.py".into()),
        vms: Reading::Value(40 * build::GIB),
        rss: Reading::Value(build::GIB),
        framework: Reading::Value(Framework::Pytorch),
        settings: Reading::Value(BTreeMap::new()),
        container: Reading::Value(gpumon::sample::Placement {
            short: "slurm:48211.0".into(),
            full: "slurm job 48211 step 0".into(),
            namespace_pid: None,
        }),
        rank: None,
        ras: gpumon::source::ras::RasAddr::At(gpumon::source::ras::DEFAULT_ADDR),
    }
}

/// Ten minutes of history at one sample a second.
pub fn state() -> State {
    State::new(Config::new(1000, 600_000))
}

/// Starts `source` into `state` and feeds it `ticks` samples, stamped one second apart from
/// `t0` (the state reads the sample's time, never a clock).
pub fn feed(source: &mut impl Source, state: &mut State, t0: u64, ticks: u64) {
    if state.machine().info.is_none() {
        state.update(Msg::from(Event::Started(source.machine().unwrap())));
    }
    for i in 0..ticks {
        let mut s = source.sample().unwrap();
        s.at_ms = t0 + i * 1000;
        state.update(Msg::from(Event::Sample(s)));
    }
}

/// The screen at 120x40, as text.
pub fn screen(state: &State) -> String {
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 40)).unwrap();
    t.draw(|f| gpumon::view::render(f, state)).unwrap();
    let buf = t.backend().buffer().clone();
    buf.content()
        .chunks(120)
        .map(|row| row.iter().map(|c| c.symbol()).collect::<String>() + "\n")
        .collect()
}
