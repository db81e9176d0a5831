//! `Snapshot::of`: the document built from one machine's data and the screen's view of it, at a
//! time the caller gives.

use super::{
    AlertDoc, FilterDoc, Gpu, GpuMemory, GpuState, HostMemoryDoc, LevelDoc, Machine, MigDoc,
    PoolDoc, PoolHistoryDoc, Process, SCHEMA, Snapshot, SortDoc, SourceDoc, Unavailable, View,
    time_ms, time_s,
};
use crate::model::{
    Alert, GpuTrack, Level, Machine as MachineData, ProcessTrack, Ring, SourceState,
};
use crate::sample::split;
use crate::sample::{GpuStatus, MachineInfo, Pool, Reading};
use crate::screen::mig::MigRow;
use crate::screen::{Filter, Screen, Sort, State};

/// Why machine facts are missing before the source has started.
const NOT_STARTED: &str = "the source had not started";

impl Snapshot {
    /// Everything the screen shows and what the filter hides, at `now_ms` (the State reads no clock).
    pub fn from_state(state: &State, now_ms: u64) -> Snapshot {
        Snapshot::of(state.machine(), &state.screen, now_ms)
    }

    /// A machine with no screen (`gpumon snapshot`, `serve`): every process shown, in the
    /// table's default order.
    pub fn of_machine(data: &MachineData, now_ms: u64) -> Snapshot {
        let mut screen = Screen::default();
        screen.derive_rows(data);
        Snapshot::of(data, &screen, now_ms)
    }

    /// The same without the coarse tiers (days of buckets): what `serve` publishes every sample,
    /// grafting the tiers of a snapshot made once a minute where a client asks for them.
    pub fn of_machine_fine(data: &MachineData, now_ms: u64) -> Snapshot {
        let mut screen = Screen::default();
        screen.derive_rows(data);
        Snapshot::build(data, &screen, now_ms, false)
    }

    /// `data` as `screen` shows it.
    pub fn of(data: &MachineData, screen: &Screen, now_ms: u64) -> Snapshot {
        Snapshot::build(data, screen, now_ms, true)
    }

    fn build(data: &MachineData, screen: &Screen, now_ms: u64, tiers: bool) -> Snapshot {
        let process = |screen, t, shown| process(screen, t, shown, tiers);
        let mut processes: Vec<Process> = screen
            .rows
            .iter()
            .filter_map(|k| data.processes.get(k))
            .map(|t| process(screen, t, true))
            .collect();
        let mut hidden: Vec<&ProcessTrack> = data
            .processes
            .values()
            .filter(|t| !screen.rows.contains(&t.key))
            .collect();
        hidden.sort_by_key(|t| (t.exited_ms.is_some(), t.key.clone()));
        processes.extend(hidden.into_iter().map(|t| process(screen, t, false)));
        Snapshot {
            schema: SCHEMA.to_string(),
            taken_at: time_ms(now_ms),
            taken_at_ms: now_ms,
            gpumon_version: env!("CARGO_PKG_VERSION").to_string(),
            machine: machine(data.info.as_ref()),
            view: view(data, screen),
            gpus: data
                .gpus_in_order()
                .into_iter()
                .map(|g| gpu(g, &screen.mig, tiers))
                .collect(),
            processes,
            alerts: data.alerts.iter().map(alert).collect(),
            alerts_dropped: data.alerts_dropped,
            jobs: super::jobs::docs(&data.jobs),
            maps: super::maps::docs(data),
            logs_behind: super::logs::docs(&data.logs_behind),
        }
    }
}

fn machine(m: Option<&MachineInfo>) -> Machine {
    let mut na = Unavailable::new();
    let mut field = |v: Option<&Option<String>>, key: &str| {
        let reading = match v {
            None => Reading::na(NOT_STARTED),
            Some(Some(s)) => Reading::Value(s.clone()),
            Some(None) => Reading::na("not reported by the source"),
        };
        split(reading, key, &mut na)
    };
    let host = m.map(|m| Some(m.host.clone()));
    Machine {
        host: field(host.as_ref(), "host"),
        kernel: field(m.map(|m| &m.kernel), "kernel"),
        driver_version: field(m.map(|m| &m.driver_version), "driver_version"),
        nvml_version: field(m.map(|m| &m.nvml_version), "nvml_version"),
        cuda_version: field(m.map(|m| &m.cuda_version), "cuda_version"),
        unavailable: na,
    }
}

fn view(data: &MachineData, screen: &Screen) -> View {
    let mut na = Unavailable::new();
    let last_sample = match data.last_sample_ms {
        Some(ms) => Reading::Value(time_ms(ms)),
        None => Reading::na("no sample yet"),
    };
    View {
        interval_ms: data.config.interval_ms,
        history_ms: data.config.history_ms,
        source: match &data.source {
            SourceState::Starting => SourceDoc::Starting,
            SourceState::Running => SourceDoc::Running,
            SourceState::Failing { since_ms, reason } => SourceDoc::Failing {
                since: time_ms(*since_ms),
                reason: reason.clone(),
            },
            SourceState::Ended => SourceDoc::Ended,
        },
        last_sample_at: split(last_sample, "last_sample_at", &mut na),
        paused: screen.paused,
        filter: screen.filter.as_ref().map(|f| match f {
            Filter::Pid(p) => FilterDoc::Pid(*p),
            Filter::Text(t) => FilterDoc::Text(t.clone()),
            Filter::Run { pid, log } => FilterDoc::Run {
                pid: *pid,
                log: log.clone(),
            },
        }),
        sort: match screen.sort {
            Sort::DeviceMemory => SortDoc::DeviceMemory,
            Sort::Growth => SortDoc::Growth,
            Sort::Vms => SortDoc::Vms,
            Sort::Pid => SortDoc::Pid,
            Sort::Gpu => SortDoc::Gpu,
        },
        focus: screen.focus.clone(),
        unavailable: na,
    }
}

fn points(ring: &Ring) -> Vec<super::Point> {
    ring.iter().copied().collect()
}

/// `tiers`: with the rings' coarse tiers.
fn gpu(t: &GpuTrack, screen_mig: &[MigRow], tiers: bool) -> Gpu {
    let docs = |r: &Ring| {
        if tiers {
            super::tiers::docs(r)
        } else {
            Vec::new()
        }
    };
    let s = &t.sample;
    let mut na = Unavailable::new();
    let memory = split(s.memory.clone(), "memory", &mut na).map(|m| {
        // `State::update` derives the segments from this same sample, so they are present here.
        let seg = t.segments;
        GpuMemory {
            total: m.total,
            used: m.used,
            free: m.free,
            reserved: split(m.reserved, "memory.reserved", &mut na),
            processes: seg.map_or(0, |g| g.processes),
            other: seg.map_or(m.used, |g| g.other),
        }
    });
    let status = match &s.status {
        GpuStatus::Ok => GpuState::Ok,
        GpuStatus::Lost { reason } => GpuState::Lost {
            since: time_ms(t.lost_since_ms.unwrap_or_default()),
            reason: reason.clone(),
        },
    };
    Gpu {
        index: s.index,
        uuid: s.uuid.clone(),
        name: s.name.clone(),
        pci_bus_id: split(s.pci_bus_id.clone(), "pci_bus_id", &mut na),
        status,
        memory,
        utilization_percent: split(s.utilization.clone(), "utilization_percent", &mut na),
        temperature_c: split(s.temperature_c.clone(), "temperature_c", &mut na),
        power_mw: split(s.power_mw.clone(), "power_mw", &mut na),
        processes_without_memory: u64::try_from(t.unattributed).unwrap_or(u64::MAX),
        used_history: points(&t.used),
        used_tiers: docs(&t.used),
        mig: mig_docs(screen_mig, &s.uuid),
        health: s.health.clone(),
        xid: t.xids.last.map(|(code, at)| super::XidDoc {
            count: t.xids.count,
            last_code: code,
            last_at: time_ms(at),
        }),
        unavailable: na,
    }
}

fn pool_doc(p: Pool) -> PoolDoc {
    PoolDoc {
        framework: p.framework.pool_name().to_string(),
        allocated: p.allocated,
        reserved: p.reserved,
        cached_free: p.cached_free,
        stranded: p.stranded,
        largest_free_block: p.largest_free_block,
        limit: p.limit,
        version: p.version,
        read_at: Some(time_ms(p.at_ms)),
        largest_alloc: p.largest_alloc,
        peak_allocated: p.peak_allocated,
        peak_reserved: p.peak_reserved,
        alloc_retries: p.alloc_retries,
        ooms: p.ooms,
    }
}

/// The MIG instances of GPU `uuid`, with their process counts.
fn mig_docs(rows: &[MigRow], uuid: &str) -> Vec<MigDoc> {
    rows.iter()
        .filter(|r| r.gpu_uuid == uuid)
        .map(|r| {
            let i = &r.instance;
            let mut na = Unavailable::new();
            let memory = split(i.memory.clone(), "memory", &mut na);
            MigDoc {
                uuid: i.uuid.clone(),
                profile: i.profile.clone(),
                gpu_instance_id: i.gpu_instance_id,
                compute_instance_id: i.compute_instance_id,
                memory_total: memory.map(|m| m.total),
                memory_used: memory.map(|m| m.used),
                processes: u64::try_from(r.processes).unwrap_or(u64::MAX),
                unavailable: na,
            }
        })
        .collect()
}

fn process(screen: &Screen, t: &ProcessTrack, shown: bool, tiers: bool) -> Process {
    let docs = |r: &Ring| {
        if tiers {
            super::tiers::docs(r)
        } else {
            Vec::new()
        }
    };
    let s = &t.sample;
    let mut na = Unavailable::new();
    let peak = match (t.peak, s.device_memory.reason()) {
        (Some(p), _) => Reading::Value(p),
        (None, Some(reason)) => Reading::na(reason),
        (None, None) => Reading::na("no reading since the last peak reset"),
    };
    #[allow(clippy::cast_possible_truncation)]
    let growth = match (t.growth, s.device_memory.reason()) {
        (Some(g), _) => Reading::Value(g.round() as i64),
        (None, Some(reason)) => Reading::na(reason),
        (None, None) => Reading::na("needs two device-memory readings at least a second apart"),
    };
    Process {
        pid: s.pid,
        gpu_uuid: s.gpu_uuid.clone(),
        kind: s.kind,
        started_at: split(s.start_time.clone().map(time_s), "started_at", &mut na),
        user: split(s.user.clone(), "user", &mut na),
        command: split(s.command.clone(), "command", &mut na),
        framework: split(s.framework.clone(), "framework", &mut na),
        device_memory: split(s.device_memory.clone(), "device_memory", &mut na),
        peak: split(peak, "peak", &mut na),
        vms: split(s.vms.clone(), "vms", &mut na),
        rss: split(s.rss.clone(), "rss", &mut na),
        growth_bytes_per_s: split(growth, "growth_bytes_per_s", &mut na),
        settings: split(s.settings.clone(), "settings", &mut na),
        log: split(s.log.clone(), "log", &mut na),
        container: split(
            s.container
                .clone()
                .map(|c| (!c.short.is_empty()).then_some(c.short)),
            "container",
            &mut na,
        )
        .flatten(),
        rank: s.rank.clone(),
        pool: split(s.pool.clone().map(pool_doc), "pool", &mut na),
        util: split(s.util.clone(), "util", &mut na),
        gpu_instance_id: s.gpu_instance_id,
        compute_instance_id: s.compute_instance_id,
        shown,
        selected: screen.selected.as_ref() == Some(&t.key),
        first_seen_at: time_ms(t.first_seen_ms),
        exited_at: t.exited_ms.map(time_ms),
        history: points(&t.history),
        history_tiers: docs(&t.history),
        pool_history: t.pool_history.as_ref().map(|h| PoolHistoryDoc {
            allocated: points(&h.allocated),
            reserved: points(&h.reserved),
            stranded: points(&h.stranded),
            limit: points(&h.limit),
            peak: points(&h.peak),
            tiers: tiers.then(|| super::PoolTiersDoc {
                allocated: docs(&h.allocated),
                reserved: docs(&h.reserved),
                stranded: docs(&h.stranded),
                peak: docs(&h.peak),
            }),
        }),
        host_memory_last: t
            .host_last
            .filter(|_| s.vms.get().is_none())
            .map(|h| HostMemoryDoc {
                vms: h.vms,
                rss: h.rss,
                read_at: time_ms(h.at_ms),
            }),
        end: t.end.clone(),
        stuck: t.stuck.clone(),
        unavailable: na,
    }
}

fn alert(a: &Alert) -> AlertDoc {
    AlertDoc {
        at: time_ms(a.at_ms),
        level: match a.level {
            Level::Failure => LevelDoc::Failure,
            Level::Suspected => LevelDoc::Suspected,
            Level::Info => LevelDoc::Info,
            Level::Notice => LevelDoc::Notice,
        },
        class: a.class.clone(),
        confidence: a.confidence.clone(),
        gpu_uuid: a.gpu_uuid.clone(),
        pid: a.pid,
        title: a.title.clone(),
        evidence: a.evidence.clone(),
        remedy: a.remedy.clone(),
        job: a.job.clone(),
    }
}
