//! One machine's data: its GPUs, processes with their history rings, alerts and the state of its
//! source, built from samples by a pure update (no clock, no I/O: each event carries its time).
//!
//! The screen's state (selection, filter, sort, …) lives in `screen` and only refers to machines.

pub mod exits;
pub mod gpu;
pub mod held;

use std::collections::BTreeMap;

use crate::model::health::{Trouble, XidTally, troubles};
use crate::model::jobs::{self, Job};
use crate::model::process::PROBE_OOM_MAP_WAIT_MS;
use crate::model::{Alert, Config, Level, MAX_ALERTS, MapTrack, ProcKey, ProcessTrack, Ring};
use crate::sample::{GpuEvent, GpuSample, GpuStatus, MachineInfo, Sample};
use gpu::UtilSpell;
use held::Held;

/// GPU events a machine keeps.
pub const MAX_EVENTS: usize = 64;
/// How long before the sample that saw a probe's OOM count rise its map can have been begun.
const OOM_MAP_LEAD_MS: u64 = 10_000;

/// Where the samples stand.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceState {
    /// The source is starting (NVML initialising).
    Starting,
    Running,
    /// The last tick failed; the reason, and since when.
    Failing {
        since_ms: u64,
        reason: String,
    },
    /// A replay reached its end.
    Ended,
}

/// What the sampler reports about a machine.
#[derive(Debug, Clone)]
pub enum Event {
    Started(MachineInfo),
    Sample(Sample),
    SourceFailed {
        at_ms: u64,
        reason: String,
    },
    SourceEnded,
    /// The current time, sent when no sample has come for a while (shows sample age).
    Clock(u64),
    /// A looping replay (the demo) reached its end and starts again: lap `n` (2, 3, …). The
    /// machine starts clean, so nothing of the last lap (its exited processes, its alerts)
    /// stays.
    Lap(u32),
}

/// Four segments of the memory bar, in bytes; they add up to `total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segments {
    pub total: u64,
    /// Device memory of the listed processes (those whose memory NVML could read).
    pub processes: u64,
    /// Used memory not attributed to a listed process (`used - processes`, at least 0).
    pub other: u64,
    /// Driver/firmware reserved; `None` with NVML v1, where it is inside `used`.
    pub reserved: Option<u64>,
    pub free: u64,
}

/// One GPU: its latest sample and history.
#[derive(Debug, Clone)]
pub struct GpuTrack {
    pub sample: GpuSample,
    pub segments: Option<Segments>,
    /// Used memory over the history window.
    pub used: Ring,
    /// Since when the GPU has been lost, if it is.
    pub lost_since_ms: Option<u64>,
    /// Total memory as last read; kept while the GPU is lost, so its history keeps its scale.
    pub total: Option<u64>,
    /// Processes on it whose device memory NVML could not give.
    pub unattributed: usize,
    /// Alerts that name this GPU (failures and suspected risks: those that warn).
    pub alerts: usize,
    /// Information-level findings that name this GPU.
    pub infos: usize,
    /// What its memory health says that is worth a word (empty when all is well).
    pub troubles: Vec<Trouble>,
    /// Its Xid events since gpumon started watching it.
    pub xids: XidTally,
    /// How long its utilisation has stood idle or busy.
    pub util: Option<UtilSpell>,
}

/// One machine: what it is, where its samples stand, and everything derived from them.
#[derive(Debug, Clone)]
pub struct Machine {
    pub config: Config,
    /// `None` until the source has started.
    pub info: Option<MachineInfo>,
    pub source: SourceState,
    /// The latest time known (from samples or clock events).
    pub now_ms: u64,
    pub last_sample_ms: Option<u64>,
    /// Keyed by UUID; shown in NVML index order.
    pub gpus: BTreeMap<String, GpuTrack>,
    pub processes: BTreeMap<ProcKey, ProcessTrack>,
    /// Newest first, at most `MAX_ALERTS`.
    pub alerts: Vec<Alert>,
    /// The GPUs' latest events (Xids, ECC and remap events), oldest first, at most `MAX_EVENTS`:
    /// what a job's memory fault is joined with.
    pub events: Vec<GpuEvent>,
    pub alerts_dropped: u64,
    /// Probed processes' block maps and probe state, by (pid, start time).
    pub maps: BTreeMap<(u32, u64), MapTrack>,
    /// What the samples a paused screen did not take in carried besides their readings.
    pub held: Held,
    /// Failures read from logs that wait a few seconds: memory faults for the Xid the driver
    /// reports for them (`analysis::fault::waits_for_xid`), an OOM line of a shared log for its
    /// writer's probe to count it (`analysis::job_failure::counted`).
    pub waiting_failures: Vec<crate::oom::failure::Failure>,
    /// The distributed jobs among the processes (their ranks side by side), by id.
    pub jobs: Vec<Job>,
    /// Which pass over its recording a looping replay is on (1: the first; live sources stay 1).
    pub lap: u32,
    /// Jobs' failures as analysis judged them, oldest first (`job_failure.rs`).
    pub job_failures: Vec<crate::model::job_failure::JobFailure>,
    /// NCCL's RAS service's latest answer (replaced by each sample that carries one).
    pub ras: Option<crate::sample::RasStatus>,
    /// The followed logs the latest sample's source had not read to their end.
    pub logs_behind: Vec<crate::sample::LogBehind>,
}

impl Machine {
    pub fn new(config: Config) -> Self {
        Machine {
            config,
            info: None,
            source: SourceState::Starting,
            now_ms: 0,
            last_sample_ms: None,
            gpus: BTreeMap::new(),
            processes: BTreeMap::new(),
            alerts: Vec::new(),
            events: Vec::new(),
            alerts_dropped: 0,
            maps: BTreeMap::new(),
            held: Held::default(),
            waiting_failures: Vec::new(),
            jobs: Vec::new(),
            lap: 1,
            job_failures: Vec::new(),
            ras: None,
            logs_behind: Vec::new(),
        }
    }

    /// Lap `lap` of a looping replay begins: the machine is as new but for what it is (`info`),
    /// its settings, its clock (the replay's keeps running forward) and what a paused screen
    /// holds.
    pub fn restart(&mut self, lap: u32) {
        let fresh = Machine::new(self.config.clone());
        *self = Machine {
            info: self.info.take(),
            source: SourceState::Running,
            now_ms: self.now_ms,
            held: std::mem::take(&mut self.held),
            lap,
            ..fresh
        };
    }

    /// GPUs in NVML index order.
    pub fn gpus_in_order(&self) -> Vec<&GpuTrack> {
        let mut v: Vec<&GpuTrack> = self.gpus.values().collect();
        v.sort_by(|a, b| (a.sample.index, &a.sample.uuid).cmp(&(b.sample.index, &b.sample.uuid)));
        v
    }

    pub fn gpu(&self, uuid: &str) -> Option<&GpuTrack> {
        self.gpus.get(uuid)
    }

    /// Moves the clock forward.
    pub fn observe_time(&mut self, at_ms: u64) {
        self.now_ms = self.now_ms.max(at_ms);
    }

    /// Every event but a sample's content; samples go through [`Machine::ingest`].
    pub fn update(&mut self, event: &Event) {
        match event {
            Event::Started(m) => {
                self.info = Some(m.clone());
                self.source = SourceState::Running;
            }
            Event::Sample(s) => self.observe_time(s.at_ms),
            Event::SourceFailed { at_ms, reason } => {
                self.observe_time(*at_ms);
                self.fail(*at_ms, reason);
            }
            Event::SourceEnded => self.source = SourceState::Ended,
            Event::Clock(now) => self.observe_time(*now),
            Event::Lap(n) => self.restart(*n),
        }
    }

    /// The source failed at `at_ms` (the source's clock): failing since then, or since it began
    /// to fail. The machine's clock is left where it is.
    pub fn fail(&mut self, at_ms: u64, reason: &str) {
        let since_ms = match &self.source {
            SourceState::Failing { since_ms, .. } => *since_ms,
            _ => at_ms,
        };
        self.source = SourceState::Failing {
            since_ms,
            reason: reason.to_string(),
        };
    }

    /// Takes a sample in: GPU and process histories, exits, the bar's segments. Its failures are
    /// left to analysis (see `pipeline::apply`).
    pub fn ingest(&mut self, mut s: Sample) {
        let at = s.at_ms;
        let mut probes = std::mem::take(&mut s.probes);
        let lives = crate::model::process::lives(&mut probes);
        crate::model::maps::ingest(&mut self.maps, probes);
        self.last_sample_ms = Some(at);
        self.source = SourceState::Running;
        if let Some(ras) = s.ras.take() {
            self.ras = Some(ras);
        }
        self.logs_behind = std::mem::take(&mut s.logs);
        let cap = self.config.ring_capacity();
        self.events.extend(s.events.iter().cloned());
        let over = self.events.len().saturating_sub(MAX_EVENTS);
        self.events.drain(..over);

        for g in s.gpus {
            let track = self
                .gpus
                .entry(g.uuid.clone())
                .or_insert_with(|| GpuTrack::new(&g, cap));
            track.note_util(at, g.utilization.value().copied());
            match &g.status {
                GpuStatus::Ok => track.lost_since_ms = None,
                GpuStatus::Lost { .. } => {
                    track.lost_since_ms.get_or_insert(at);
                }
            }
            track.used.push(at, g.memory.value().map(|m| m.used));
            if let Some(m) = g.memory.value() {
                track.total = Some(m.total);
            }
            // A lost GPU keeps what its last reading said.
            if let Some(h) = g.health.as_ref().filter(|_| g.status == GpuStatus::Ok) {
                track.troubles = troubles(h, &g.name);
            }
            track.xids.add(&s.events, &g.uuid);
            track.sample = g;
        }

        for mut p in s.processes {
            // Look the process up with a key that borrows the sample's UUID (no copy of it for
            // a process already tracked), then hand the UUID back.
            let key = ProcKey {
                gpu_uuid: std::mem::take(&mut p.gpu_uuid),
                pid: p.pid,
                start_time: p.start_time.get(),
            };
            if let Some(track) = self.processes.get_mut(&key) {
                p.gpu_uuid = key.gpu_uuid;
                track.observe(p, at);
            } else {
                p.gpu_uuid.clone_from(&key.gpu_uuid);
                let mut track = ProcessTrack::new(&p, at, cap);
                track.observe(p, at);
                self.processes.insert(key, track);
            }
        }
        exits::mark(&mut self.processes, at, self.config.keep_exited_ms);
        // After the sample's processes: an end is often told once its track is marked exited.
        crate::model::process::hear(&mut self.processes, &lives);
        self.ready_probe_ooms(at);
        exits::keep_maps(&mut self.maps, &self.processes);

        for track in self.gpus.values_mut() {
            let (sum, unknown) = processes_on(&self.processes, &track.sample.uuid)
                .filter(|t| t.exited_ms.is_none() && t.sample.gpu_uuid == track.sample.uuid)
                .fold((0u64, 0usize), |(sum, n), t| {
                    match t.sample.device_memory.get() {
                        Some(b) => (sum.saturating_add(b), n),
                        None => (sum, n + 1),
                    }
                });
            track.unattributed = unknown;
            track.segments = track.sample.memory.value().map(|m| Segments {
                total: m.total,
                processes: sum,
                other: m.used.saturating_sub(sum),
                reserved: m.reserved.get(),
                free: m.free,
            });
        }
        self.jobs = jobs::derive(&self.processes);
    }

    /// Marks the OOMs the probes counted that can be judged now: the job records no allocation
    /// history, or the map of its failure has come, or it waited long enough (see `ProbeOom`).
    fn ready_probe_ooms(&mut self, at: u64) {
        for t in self.processes.values_mut() {
            let Some(oom) = t.probe_oom.as_mut().filter(|o| o.ready_ms.is_none()) else {
                continue;
            };
            let start = t.key.start_time;
            let track = start.and_then(|s| {
                self.maps
                    .range(
                        (t.sample.pid, s.saturating_sub(1))..=(t.sample.pid, s.saturating_add(1)),
                    )
                    .map(|(_, m)| m)
                    .next()
            });
            let recording = track
                .and_then(|m| m.recording.as_ref())
                .is_some_and(|r| r.on);
            // The observer's map is timed when it began: before the sample that saw the count,
            // by up to a probe interval and a sample interval.
            let mapped = track
                .and_then(|m| m.at_oom.as_ref())
                .is_some_and(|m| m.at_ms.saturating_add(OOM_MAP_LEAD_MS) >= oom.rose_ms);
            if !recording || mapped || at.saturating_sub(oom.rose_ms) >= PROBE_OOM_MAP_WAIT_MS {
                oom.ready_ms = Some(at);
            }
        }
    }

    /// Adds alerts (newest first, bounded) and recounts each GPU's, one per condition as the
    /// alerts panel lists them (`alert::distinct`; information is counted apart: the count of
    /// alerts wears the warning sign).
    pub fn add_alerts(&mut self, alerts: Vec<Alert>) {
        for alert in alerts {
            self.alerts.insert(0, alert);
            if self.alerts.len() > MAX_ALERTS {
                self.alerts.truncate(MAX_ALERTS);
                self.alerts_dropped += 1;
            }
        }
        self.recount_alerts();
    }

    /// Each GPU's count of the alerts that name it, one per condition as the alerts panel lists
    /// them (`alert::distinct`).
    pub(crate) fn recount_alerts(&mut self) {
        let distinct: Vec<&Alert> = crate::model::alert::distinct(&self.alerts)
            .map(|(_, a)| a)
            .collect();
        for g in self.gpus.values_mut() {
            let on = |a: &&&Alert| a.gpu_uuid.as_deref() == Some(g.sample.uuid.as_str());
            g.alerts = distinct
                .iter()
                .filter(on)
                .filter(|a| a.level.warns())
                .count();
            g.infos = distinct
                .iter()
                .filter(on)
                .filter(|a| a.level == Level::Info)
                .count();
        }
    }

    /// The map track of the process `pid` started at `start_time`.
    pub fn map_of(&self, pid: u32, start_time: Option<u64>) -> Option<&MapTrack> {
        let start = start_time?;
        self.maps
            .range((pid, start.saturating_sub(1))..=(pid, start.saturating_add(1)))
            .map(|(_, t)| t)
            .next()
    }

    /// The job the process `pid` is a rank of, and its row in it.
    pub fn job_of(&self, pid: u32) -> Option<(&Job, &jobs::RankRow)> {
        self.jobs
            .iter()
            .find_map(|j| Some((j, j.ranks.iter().find(|r| r.pid == pid)?)))
    }

    /// Forgets the peaks: each process's peak becomes its current device memory.
    pub fn reset_peaks(&mut self) {
        for t in self.processes.values_mut() {
            t.peak = t.sample.device_memory.get();
        }
    }
}

/// The processes tracked on GPU `uuid`, in key order: processes are keyed by GPU first, so a
/// GPU's are one range of the map (no scan of the others).
pub fn processes_on<'a>(
    processes: &'a BTreeMap<ProcKey, ProcessTrack>,
    uuid: &str,
) -> impl Iterator<Item = &'a ProcessTrack> + 'a {
    let key = |pid, start_time| ProcKey {
        gpu_uuid: uuid.to_string(),
        pid,
        start_time,
    };
    processes
        .range(key(0, None)..=key(u32::MAX, Some(u64::MAX)))
        .map(|(_, t)| t)
}
