//! The live source: joins what the GPU driver lists with what /proc says about each process.

use std::collections::HashSet;

use super::events::{EventFeed, merge};
use super::probe::{NOT_PROBED, PoolReader, ProbeScan};
use super::ras::{RasAddr, RasWatch};
use super::{
    GpuProcess, GpuReader, HostProcess, HostReader, MachineInfo, ProcessKind, ProcessSample,
    Reading, Sample, SourceError,
};
use crate::clock::tick_times::time;
use crate::logs::{LogStatus, LogWatch};
use crate::sample::GpuEvent;

/// Why a probed process has no device memory: NVML does not list it (no NVML, another PID
/// namespace, or a process that has not allocated yet).
const NOT_LISTED: &str = "not listed by NVML";
/// The GPU of a probed process whose probe could not name it.
const UNKNOWN_GPU: &str = "GPU-unknown";

/// Why host fields are missing for a PID that NVML lists but /proc does not have.
pub const NOT_IN_NAMESPACE: &str =
    "not in this PID namespace (NVML reports host PIDs; run on the host or with --pid=host)";

/// NVML + /proc, the logs of the processes found and their allocator probes, as one source.
pub struct LiveSource<G, H> {
    gpu: G,
    host: H,
    logs: LogWatch,
    pools: Option<Box<dyn PoolReader>>,
    /// The PIDs /proc had last tick: one of them missing now has exited since NVML listed it.
    in_proc: HashSet<u32>,
    /// GPU events heard by their own threads, and those held back for `HOLD_MS` so that NVML's
    /// and the kernel's reports of one Xid become one event.
    events: Option<EventFeed>,
    held: Vec<GpuEvent>,
    /// The host's name as `machine` read it (a probed rank's loopback rendezvous names it).
    hostname: String,
    /// NCCL's RAS service, asked while a distributed job runs.
    ras: Option<RasWatch>,
}

/// How long a GPU event is held before it goes out in a sample (its twin from the other origin
/// arrives within about a second).
pub const HOLD_MS: u64 = 2_000;

impl<G: GpuReader, H: HostReader> LiveSource<G, H> {
    pub fn new(gpu: G, host: H, logs: LogWatch) -> Self {
        LiveSource {
            gpu,
            host,
            logs,
            pools: None,
            in_proc: HashSet::new(),
            events: None,
            held: Vec::new(),
            hostname: String::new(),
            ras: None,
        }
    }

    /// Also hands on the GPU events `feed`'s sources hear.
    pub fn with_events(mut self, feed: EventFeed) -> Self {
        self.events = Some(feed);
        self
    }

    /// Also asks NCCL's RAS service while a distributed job runs.
    pub fn with_ras(mut self, watch: RasWatch) -> Self {
        self.ras = Some(watch);
        self
    }

    /// Also reads the allocator probes' files.
    pub fn with_pools(mut self, pools: Box<dyn PoolReader>) -> Self {
        self.pools = Some(pools);
        self
    }
}

impl<G: GpuReader, H: HostReader> super::Source for LiveSource<G, H> {
    fn machine(&mut self) -> Result<MachineInfo, SourceError> {
        let mut info = self.gpu.versions()?;
        let (host, kernel) = self.host.host();
        self.hostname.clone_from(&host);
        info.host = host;
        info.kernel = kernel;
        Ok(info)
    }

    fn sample(&mut self) -> Result<Sample, SourceError> {
        let mut readout = time("nvml.read (all GPUs)", || self.gpu.read())?;
        let at_ms = crate::clock::unix_ms();
        let probes = time("probe.scan", || {
            self.pools
                .as_mut()
                .map(|p| p.scan(at_ms))
                .unwrap_or_default()
        });
        readout
            .processes
            .extend(probed_only(&readout.processes, &probes));
        let mut pids: Vec<u32> = readout.processes.iter().map(|p| p.pid).collect();
        pids.sort_unstable();
        pids.dedup();
        let host = time("proc.lookup (all)", || self.host.lookup(&pids));
        let failures = time("logs.poll", || self.logs.poll(at_ms, &pids));
        let processes = readout
            .processes
            .into_iter()
            .filter_map(|p| {
                let h = match host.get(&p.pid) {
                    Some(h) => Some(h.clone()),
                    // Gone from /proc since last tick: it exited between the two reads.
                    None if self.in_proc.contains(&p.pid) => return None,
                    None => None,
                };
                let log = h
                    .as_ref()
                    .and(self.logs.status(p.pid))
                    .map(LogStatus::reading);
                let mut s = join(p, h);
                if let Some(log) = log {
                    s.log = log;
                }
                if let Some(report) = probes.reports.get(&s.pid)
                    && s.start_time.value().is_some()
                {
                    s.pool = report.pool_for(&s, at_ms);
                    if report
                        .start_time
                        .abs_diff(s.start_time.get().unwrap_or_default())
                        <= 1
                    {
                        s.rank = super::launcher::merge(
                            s.rank.take(),
                            report.distributed.clone(),
                            &self.hostname,
                        );
                    }
                }
                Some(s)
            })
            .collect::<Vec<ProcessSample>>();
        let ras = self.ras.as_mut().and_then(|w| {
            let services = ras_services(&processes, &host);
            time("ras.poll", || w.poll(at_ms, &services))
        });
        // A probe's news only for the process it describes (not an earlier one with its PID);
        // a process gone from /proc has only its end and place left to tell, which `ProbeDirs`
        // read from the last file of the process whose file it accepted while it ran.
        let news = probes
            .news
            .into_iter()
            .filter(|n| match host.get(&n.pid) {
                Some(h) => h
                    .start_time
                    .get()
                    .is_some_and(|s| s.abs_diff(n.start_time) <= 1),
                None => n.map.is_none() && (n.end.is_some() || n.main_where.is_some()),
            })
            .collect();
        self.in_proc.clear();
        self.in_proc.extend(host.keys());
        let mut notices = probes.notices;
        let events = self.events(&readout.gpus, at_ms, &mut notices);
        Ok(Sample {
            at_ms,
            gpus: readout.gpus,
            processes,
            failures,
            notices,
            events,
            probes: news,
            ras,
            logs: self.logs.behind(),
        })
    }
}

impl<G, H> LiveSource<G, H> {
    /// The GPU events due at `at_ms` (held `HOLD_MS`, twins merged, kernel lines named by PCI
    /// address), and the event sources' notices.
    fn events(
        &mut self,
        gpus: &[super::GpuSample],
        at_ms: u64,
        notices: &mut Vec<String>,
    ) -> Vec<GpuEvent> {
        let Some(feed) = &mut self.events else {
            return Vec::new();
        };
        let (heard, said) = feed.drain();
        notices.extend(said);
        self.held.extend(heard);
        let named: Vec<(&str, Option<&str>)> = gpus
            .iter()
            .map(|g| (g.uuid.as_str(), g.pci_bus_id.value().map(String::as_str)))
            .collect();
        let (due, held) = merge(std::mem::take(&mut self.held), &named)
            .into_iter()
            .partition(|e| e.at_ms.saturating_add(HOLD_MS) <= at_ms);
        self.held = held;
        due
    }
}

/// Processes a probe reports that NVML does not list: one row per GPU its framework uses, with
/// device memory n/a (without NVML, `gpumon run` still shows the job's pool this way).
fn probed_only(listed: &[GpuProcess], probes: &ProbeScan) -> Vec<GpuProcess> {
    let mut rows = Vec::new();
    for report in probes.reports.values() {
        if listed.iter().any(|p| p.pid == report.pid) {
            continue;
        }
        for d in &report.devices {
            rows.push(GpuProcess {
                pid: report.pid,
                gpu_uuid: d.uuid.clone().unwrap_or_else(|| UNKNOWN_GPU.to_string()),
                kind: ProcessKind::Compute,
                device_memory: Reading::na(NOT_LISTED),
                util: Reading::na(NOT_LISTED),
                gpu_instance_id: None,
                compute_instance_id: None,
            });
        }
    }
    rows.sort_by(|a, b| (a.pid, &a.gpu_uuid).cmp(&(b.pid, &b.gpu_uuid)));
    rows.dedup_by(|a, b| a.pid == b.pid && a.gpu_uuid == b.gpu_uuid);
    rows
}

/// Where the RAS services of the machine's NCCL ranks are (a rank whose probe saw another
/// backend is left out; one not probed may run NCCL).
fn ras_services(
    processes: &[ProcessSample],
    host: &std::collections::HashMap<u32, HostProcess>,
) -> Vec<RasAddr> {
    processes
        .iter()
        .filter(|p| p.rank.as_ref().is_some_and(|r| r.nccl() != Some(false)))
        .map(|p| {
            host.get(&p.pid)
                .map_or(RasAddr::At(super::ras::DEFAULT_ADDR), |h| h.ras)
        })
        .collect()
}

/// Why a process's log is not followed when /proc does not have it.
const LOG_NOT_IN_NAMESPACE: &str = "not readable (not in this PID namespace)";

/// One row: the driver's view of a process plus /proc's, or n/a with the reason. Its `log` is
/// n/a until the source sets what the log watch found.
pub fn join(p: super::GpuProcess, host: Option<HostProcess>) -> ProcessSample {
    let (log, pool_reason) = match host {
        Some(_) => (Reading::na("not looked at yet"), NOT_PROBED),
        None => (Reading::na(LOG_NOT_IN_NAMESPACE), NOT_IN_NAMESPACE),
    };
    let host = host.unwrap_or_else(|| HostProcess {
        start_time: Reading::na(NOT_IN_NAMESPACE),
        user: Reading::na(NOT_IN_NAMESPACE),
        command: Reading::na(NOT_IN_NAMESPACE),
        vms: Reading::na(NOT_IN_NAMESPACE),
        rss: Reading::na(NOT_IN_NAMESPACE),
        framework: Reading::na(NOT_IN_NAMESPACE),
        settings: Reading::na(NOT_IN_NAMESPACE),
        container: Reading::na(NOT_IN_NAMESPACE),
        rank: None,
        ras: super::ras::RasAddr::At(super::ras::DEFAULT_ADDR),
    });
    ProcessSample {
        pid: p.pid,
        gpu_uuid: p.gpu_uuid,
        kind: p.kind,
        device_memory: p.device_memory,
        util: p.util,
        gpu_instance_id: p.gpu_instance_id,
        compute_instance_id: p.compute_instance_id,
        start_time: host.start_time,
        user: host.user,
        command: host.command,
        vms: host.vms,
        rss: host.rss,
        framework: host.framework,
        settings: host.settings,
        log,
        pool: Reading::na(pool_reason),
        container: host.container,
        rank: host.rank,
    }
}
