//! A snapshot back into one machine's data (`Snapshot::to_machine`): how a remote host's
//! `/snapshot` becomes a `model::Machine` the screen shows exactly like the local one. Each poll
//! of a host replaces its machine: the snapshot carries the history rings, peaks and alerts.

use std::time::UNIX_EPOCH;

use super::{
    AlertDoc, Gpu, GpuState, LevelDoc, MigDoc, Point, PoolDoc, Process, Snapshot, SourceDoc,
    TierDoc, Unavailable,
};
use crate::model::health::XidTally;
use crate::model::{
    Alert, Config, GpuTrack, HostMemory, Level, Machine, PoolHistory, ProcKey, ProcessTrack, Ring,
    Segments, SourceState,
};
use crate::sample::{
    Framework, GpuSample, GpuStatus, MachineInfo, Memory, MigInstance, MigMemory, Placement, Pool,
    ProcessSample, Reading, join,
};

impl Snapshot {
    /// The machine this snapshot describes. Its rings keep every point of the snapshot's history
    /// (`config` is the viewer's; interval and history come from the snapshot's `view`).
    pub fn to_machine(&self, config: &Config) -> Machine {
        let config = Config {
            interval_ms: self.view.interval_ms.max(1),
            history_ms: self.view.history_ms,
            ..config.clone()
        };
        let cap = config.ring_capacity();
        let mut machine = Machine::new(config);
        machine.info = Some(info(self));
        machine.source = match &self.view.source {
            SourceDoc::Starting => SourceState::Starting,
            SourceDoc::Running => SourceState::Running,
            SourceDoc::Failing { since, reason } => SourceState::Failing {
                since_ms: ms(since).unwrap_or(self.taken_at_ms),
                reason: reason.clone(),
            },
            SourceDoc::Ended => SourceState::Ended,
        };
        machine.now_ms = self.taken_at_ms;
        machine.last_sample_ms = self.view.last_sample_at.as_deref().and_then(ms);
        machine.gpus = self
            .gpus
            .iter()
            .map(|g| (g.uuid.clone(), gpu(g, cap)))
            .collect();
        machine.processes = self
            .processes
            .iter()
            .map(|p| {
                let t = process(p, cap);
                (t.key.clone(), t)
            })
            .collect();
        machine.jobs = crate::model::jobs::derive(&machine.processes);
        // Oldest first, as the analysis would have added them: the list ends newest first.
        machine.add_alerts(self.alerts.iter().rev().map(alert).collect());
        machine.alerts_dropped = self.alerts_dropped;
        super::maps::restore(&mut machine, &self.maps);
        machine.logs_behind = super::logs::restore(&self.logs_behind);
        machine
    }
}

/// Milliseconds since the epoch of an RFC 3339 time; `None` when it is not one.
pub(super) fn ms(text: &str) -> Option<u64> {
    let t = humantime::parse_rfc3339_weak(text).ok()?;
    u64::try_from(t.duration_since(UNIX_EPOCH).ok()?.as_millis()).ok()
}

fn info(s: &Snapshot) -> MachineInfo {
    let m = &s.machine;
    MachineInfo {
        host: m.host.clone().unwrap_or_else(|| "unknown".to_string()),
        kernel: m.kernel.clone(),
        driver_version: m.driver_version.clone(),
        nvml_version: m.nvml_version.clone(),
        cuda_version: m.cuda_version.clone(),
        no_gpu: None,
    }
}

/// A ring back from its points and, where the snapshot has them, its coarse tiers.
fn ring(points: &[Point], tiers: &[TierDoc], cap: usize) -> Ring {
    Ring::restore(cap, points, super::tiers::restore(tiers))
}

fn gpu(g: &Gpu, cap: usize) -> GpuTrack {
    let na = &g.unavailable;
    let memory = match &g.memory {
        Some(m) => Reading::Value(Memory {
            total: m.total,
            used: m.used,
            free: m.free,
            reserved: join(m.reserved, "memory.reserved", na),
        }),
        None => join(None, "memory", na),
    };
    let (status, lost_since_ms) = match &g.status {
        GpuState::Ok => (GpuStatus::Ok, None),
        GpuState::Lost { since, reason } => (
            GpuStatus::Lost {
                reason: reason.clone(),
            },
            ms(since),
        ),
    };
    let used = ring(&g.used_history, &g.used_tiers, cap);
    let total = g
        .memory
        .as_ref()
        .map(|m| m.total)
        .or_else(|| used.iter().rev().find_map(|p| p.value));
    GpuTrack {
        segments: g.memory.as_ref().map(|m| Segments {
            total: m.total,
            processes: m.processes,
            other: m.other,
            reserved: m.reserved,
            free: m.free,
        }),
        sample: GpuSample {
            uuid: g.uuid.clone(),
            index: g.index,
            name: g.name.clone(),
            pci_bus_id: join(g.pci_bus_id.clone(), "pci_bus_id", na),
            status,
            memory,
            utilization: join(g.utilization_percent, "utilization_percent", na),
            temperature_c: join(g.temperature_c, "temperature_c", na),
            power_mw: join(g.power_mw, "power_mw", na),
            mig: g.mig.iter().map(mig).collect(),
            health: g.health.clone(),
        },
        used,
        lost_since_ms,
        total,
        unattributed: usize::try_from(g.processes_without_memory).unwrap_or(usize::MAX),
        alerts: 0,
        infos: 0,
        troubles: g
            .health
            .as_ref()
            .map(|h| crate::model::health::troubles(h, &g.name))
            .unwrap_or_default(),
        xids: g.xid.as_ref().map_or_else(XidTally::default, |x| XidTally {
            count: x.count,
            last: ms(&x.last_at).map(|at| (x.last_code, at)),
        }),
        // A snapshot holds one reading: no spell is known from it.
        util: None,
    }
}

fn process(p: &Process, cap: usize) -> ProcessTrack {
    let na: &Unavailable = &p.unavailable;
    let start_time = p.started_at.as_deref().and_then(ms).map(|m| m / 1000);
    let sample = ProcessSample {
        pid: p.pid,
        gpu_uuid: p.gpu_uuid.clone(),
        kind: p.kind,
        device_memory: join(p.device_memory, "device_memory", na),
        start_time: join(start_time, "started_at", na),
        user: join(p.user.clone(), "user", na),
        command: join(p.command.clone(), "command", na),
        vms: join(p.vms, "vms", na),
        rss: join(p.rss, "rss", na),
        framework: join(p.framework, "framework", na),
        settings: join(p.settings.clone(), "settings", na),
        log: join(p.log.clone(), "log", na),
        pool: join(p.pool.as_ref().map(pool), "pool", na),
        util: join(p.util, "util", na),
        gpu_instance_id: p.gpu_instance_id,
        compute_instance_id: p.compute_instance_id,
        container: match (&p.container, na.get("container")) {
            (None, Some(reason)) => Reading::na(reason.clone()),
            (short, _) => Reading::Value(Placement {
                short: short.clone().unwrap_or_default(),
                full: short.clone().unwrap_or_default(),
                namespace_pid: None,
            }),
        },
        rank: p.rank.clone(),
    };
    let history = ring(&p.history, &p.history_tiers, cap);
    let first_seen_ms = ms(&p.first_seen_at).unwrap_or_default();
    let last_seen_ms = history.iter().last().map_or(first_seen_ms, |pt| pt.at_ms);
    #[allow(clippy::cast_precision_loss)]
    ProcessTrack {
        key: ProcKey {
            gpu_uuid: p.gpu_uuid.clone(),
            pid: p.pid,
            start_time,
        },
        sample,
        history,
        peak: p.peak,
        growth: p.growth_bytes_per_s.map(|g| g as f64),
        first_seen_ms,
        last_seen_ms,
        exited_ms: p.exited_at.as_deref().and_then(ms),
        last_change: None,
        prev_pool: None,
        probe_oom: None,
        pool_history: p.pool_history.as_ref().map(|h| {
            let t = h.tiers.as_ref();
            let tiers = |f: fn(&super::PoolTiersDoc) -> &[TierDoc]| t.map_or(&[][..], f);
            PoolHistory {
                allocated: ring(&h.allocated, tiers(|t| &t.allocated), cap),
                reserved: ring(&h.reserved, tiers(|t| &t.reserved), cap),
                stranded: ring(&h.stranded, tiers(|t| &t.stranded), cap),
                peak: ring(&h.peak, tiers(|t| &t.peak), cap),
                limit: ring(&h.limit, &[], cap),
                retries_at: Vec::new(),
            }
        }),
        host_last: p.host_memory_last.as_ref().map(|h| HostMemory {
            vms: h.vms,
            rss: h.rss,
            at_ms: ms(&h.read_at).unwrap_or_default(),
        }),
        end: p.end.clone(),
        stuck: p.stuck.clone(),
    }
}

/// A MIG instance back from the document.
fn mig(d: &MigDoc) -> MigInstance {
    let memory = match (d.memory_total, d.memory_used) {
        (Some(total), Some(used)) => Reading::Value(MigMemory { total, used }),
        _ => join(None, "memory", &d.unavailable),
    };
    MigInstance {
        uuid: d.uuid.clone(),
        profile: d.profile.clone(),
        gpu_instance_id: d.gpu_instance_id,
        compute_instance_id: d.compute_instance_id,
        memory,
    }
}

/// The probe's figures back from the document (an unknown framework name reads as "other").
fn pool(d: &PoolDoc) -> Pool {
    let framework = Framework::from_pool_name(&d.framework).unwrap_or(Framework::Other);
    Pool {
        framework,
        version: d.version.clone(),
        at_ms: d.read_at.as_deref().and_then(ms).unwrap_or_default(),
        allocated: d.allocated,
        reserved: d.reserved,
        cached_free: d.cached_free,
        stranded: d.stranded,
        largest_free_block: d.largest_free_block,
        largest_alloc: d.largest_alloc,
        limit: d.limit,
        peak_allocated: d.peak_allocated,
        peak_reserved: d.peak_reserved,
        alloc_retries: d.alloc_retries,
        ooms: d.ooms,
    }
}

fn alert(a: &AlertDoc) -> Alert {
    Alert {
        at_ms: ms(&a.at).unwrap_or_default(),
        gpu_uuid: a.gpu_uuid.clone(),
        pid: a.pid,
        level: match a.level {
            LevelDoc::Failure => Level::Failure,
            LevelDoc::Suspected => Level::Suspected,
            LevelDoc::Info => Level::Info,
            LevelDoc::Notice => Level::Notice,
        },
        class: a.class.clone(),
        confidence: a.confidence.clone(),
        title: a.title.clone(),
        evidence: a.evidence.clone(),
        remedy: a.remedy.clone(),
        job: a.job.clone(),
    }
}
