//! The text form of a snapshot (`--format text`): the same content for a person, in lines of at
//! most 80 columns, fit for a terminal or an issue comment.

use super::lines::{Out, fit, history, size};
use super::timeline::Moment;
use super::{FilterDoc, GpuState, LevelDoc, Process, Snapshot, SortDoc, SourceDoc, Unavailable};
use crate::model::units;

/// The whole snapshot as text.
pub fn render(s: &Snapshot) -> String {
    let mut o = Out::default();
    header(&mut o, s);
    gpus(&mut o, s);
    process_table(&mut o, s);
    super::jobs::text(&mut o, s);
    process_details(&mut o, s);
    super::maps::text(&mut o, &s.maps);
    alerts(&mut o, s);
    o.0
}

fn or_na(v: Option<&str>) -> &str {
    v.unwrap_or("n/a")
}

fn header(o: &mut Out, s: &Snapshot) {
    let m = &s.machine;
    o.para(
        0,
        &format!(
            "gpumon snapshot of {} at {} (gpumon {})",
            or_na(m.host.as_deref()),
            s.taken_at,
            s.gpumon_version
        ),
    );
    o.para(
        0,
        &format!(
            "kernel {}, driver {}, NVML {}, CUDA {}",
            or_na(m.kernel.as_deref()),
            or_na(m.driver_version.as_deref()),
            or_na(m.nvml_version.as_deref()),
            or_na(m.cuda_version.as_deref())
        ),
    );
    reasons(o, 0, &m.unavailable);
    let v = &s.view;
    let source = match &v.source {
        SourceDoc::Starting => "starting".to_string(),
        SourceDoc::Running => "running".to_string(),
        SourceDoc::Failing { since, reason } => format!("failing since {since}: {reason}"),
        SourceDoc::Ended => "ended (the end of the recording)".to_string(),
    };
    o.para(
        0,
        &format!(
            "every {}, history {}, source {source}{}, last sample {}",
            units::duration_ms(v.interval_ms),
            units::duration_ms(v.history_ms),
            if v.paused { " (paused)" } else { "" },
            or_na(v.last_sample_at.as_deref()),
        ),
    );
    let filter = match &v.filter {
        None => "none".to_string(),
        Some(FilterDoc::Pid(p)) => format!("pid {p}"),
        Some(FilterDoc::Text(t)) => format!("{t:?}"),
        Some(FilterDoc::Run { pid, log }) => format!("run pid {pid} and the writers of {log}"),
    };
    let focus = v.focus.as_deref().map_or_else(
        || "all GPUs".to_string(),
        |u| {
            s.gpu(u)
                .map_or(u.to_string(), |g| format!("GPU {}", g.index))
        },
    );
    let sort = match v.sort {
        SortDoc::DeviceMemory => "device memory",
        SortDoc::Growth => "growth",
        SortDoc::Vms => "VMS",
        SortDoc::Pid => "PID",
        SortDoc::Gpu => "GPU",
    };
    let shown = s.processes.iter().filter(|p| p.shown).count();
    let exited = s.processes.iter().filter(|p| p.exited_at.is_some()).count();
    let hidden = s
        .processes
        .iter()
        .filter(|p| !p.shown && p.exited_at.is_none())
        .count();
    o.para(
        0,
        &format!(
            "filter {filter}, focus {focus}, sort by {sort}; processes: {shown} shown, \
             {hidden} hidden by the filter or focus, {exited} exited"
        ),
    );
    reasons(o, 0, &v.unavailable);
    for l in &s.logs_behind {
        let since = l.since.as_deref().map_or_else(String::new, |t| {
            format!(" (its first unread byte on disk since {t})")
        });
        let behind = crate::oom::sizes::human(l.bytes);
        o.para(
            0,
            &format!(
                "log {} read behind its writer: {behind} not read yet{since}",
                l.log
            ),
        );
    }
}

/// The reasons of unavailable fields, fields with the same reason on one line.
fn reasons(o: &mut Out, indent: usize, na: &Unavailable) {
    let mut by_reason: Vec<(&str, Vec<&str>)> = Vec::new();
    for (key, why) in na {
        match by_reason.iter_mut().find(|(w, _)| w == why) {
            Some((_, keys)) => keys.push(key),
            None => by_reason.push((why, vec![key])),
        }
    }
    for (why, keys) in by_reason {
        o.para(indent, &format!("n/a {}: {why}", keys.join(", ")));
    }
}

fn gpus(o: &mut Out, s: &Snapshot) {
    o.blank();
    o.row("GPUs (sizes in MiB/GiB: M, G)");
    if s.gpus.is_empty() {
        o.row("  none");
        return;
    }
    o.row(&format!(
        "{:<3} {:<16} {:>7} {:>7} {:>7} {:>7} {:>7} {:>4} {:>4} {:>5}",
        "GPU", "NAME", "TOTAL", "PROCS", "OTHER", "RSVD", "FREE", "UTIL", "TEMP", "POWER"
    ));
    for g in &s.gpus {
        let m = g.memory.as_ref();
        o.row(&format!(
            "{:<3} {:<16} {:>7} {:>7} {:>7} {:>7} {:>7} {:>4} {:>4} {:>5}",
            g.index,
            fit(&g.name, 16),
            size(m.map(|m| m.total)),
            size(m.map(|m| m.processes)),
            size(m.map(|m| m.other)),
            size(m.and_then(|m| m.reserved)),
            size(m.map(|m| m.free)),
            g.utilization_percent
                .map_or("n/a".into(), |u| format!("{u}%")),
            g.temperature_c.map_or("n/a".into(), |t| format!("{t}C")),
            g.power_mw
                .map_or("n/a".into(), |p| format!("{}W", p / 1000)),
        ));
        o.para(
            4,
            &format!("{}  PCI {}", g.uuid, or_na(g.pci_bus_id.as_deref())),
        );
        if let GpuState::Lost { since, reason } = &g.status {
            o.para(4, &format!("LOST since {since}: {reason}"));
        }
        if let Some(m) = m {
            o.para(4, &format!("used {}", size(Some(m.used))));
        }
        if g.processes_without_memory > 0 {
            o.para(
                4,
                &format!(
                    "{} process(es) without a device-memory reading (counted in OTHER)",
                    g.processes_without_memory
                ),
            );
        }
        o.para(4, &format!("used over time {}", history(&g.used_history)));
        if let Some(h) = &g.health {
            o.para(4, &super::lines::health(h));
        }
        if let Some(x) = &g.xid {
            let code = x
                .last_code
                .map_or("of unknown code".into(), |c| c.to_string());
            o.para(
                4,
                &format!("Xid: {} heard, the last {code} at {}", x.count, x.last_at),
            );
        }
        reasons(o, 4, &g.unavailable);
        for m in &g.mig {
            o.para(
                4,
                &format!(
                    "MIG {}/{} {}: used {} of {}, {} process(es)  {}",
                    m.gpu_instance_id,
                    m.compute_instance_id,
                    m.profile,
                    size(m.memory_used),
                    size(m.memory_total),
                    m.processes,
                    m.uuid
                ),
            );
            reasons(o, 6, &m.unavailable);
        }
    }
}

fn gpu_label(s: &Snapshot, uuid: &str) -> String {
    s.gpu(uuid).map_or("?".into(), |g| g.index.to_string())
}

fn process_table(o: &mut Out, s: &Snapshot) {
    o.blank();
    o.row("Processes (> selected, * hidden by the filter or focus, x exited)");
    if s.processes.is_empty() {
        o.row("  none");
        return;
    }
    o.row(&format!(
        "  {:<3} {:<7} {:<8} {:<5} {:>7} {:>7} {:>7} {:>7} {:>8} {}",
        "GPU", "PID", "USER", "FW", "DEVICE", "PEAK", "VMS", "RSS", "GROW/10s", "COMMAND"
    ));
    for p in &s.processes {
        o.row(&format!(
            // 80 columns: a growth rate takes up to 8 ("+12.5M/s"), the command what is left.
            "{} {:<3} {:<7} {:<8} {:<5} {:>7} {:>7} {:>7} {:>7} {:>8} {}",
            mark(p),
            gpu_label(s, &p.gpu_uuid),
            p.pid,
            fit(or_na(p.user.as_deref()), 8),
            p.framework.map_or("n/a", |f| f.label()),
            size(p.device_memory),
            size(p.peak),
            last_or(p.vms, p.host_memory_last.as_ref().map(|h| h.vms)),
            last_or(p.rss, p.host_memory_last.as_ref().and_then(|h| h.rss)),
            growth(p.growth_bytes_per_s),
            fit(or_na(p.command.as_deref()), 10),
        ));
    }
}

/// A size, else its last reading marked `~` (the process's address space is gone), else n/a.
fn last_or(now: Option<u64>, last: Option<u64>) -> String {
    match (now, last) {
        (None, Some(l)) => format!("~{}", size(Some(l))),
        (v, _) => size(v),
    }
}

/// The selected process's timeline: allocated, pool and device memory (device alone without
/// the probe) around its alerts.
fn timeline(s: &Snapshot, p: &Process) -> Option<String> {
    let mut series: Vec<(&str, &[super::Point])> = Vec::new();
    if let Some(h) = &p.pool_history {
        series.extend([("allocated", &h.allocated[..]), ("pool", &h.reserved[..])]);
    }
    series.push(("device", &p.history));
    let moments: Vec<Moment> = s
        .alerts
        .iter()
        .filter(|a| a.pid == Some(p.pid) && a.level != LevelDoc::Notice)
        .filter(|a| a.gpu_uuid.as_ref().is_none_or(|g| *g == p.gpu_uuid))
        .filter_map(|a| {
            Some(Moment {
                at_ms: super::restore::ms(&a.at)?,
                failure: a.level == LevelDoc::Failure,
            })
        })
        .collect();
    super::timeline::render(p.pid, &series, &moments)
}

#[allow(clippy::cast_precision_loss)]
fn growth(v: Option<i64>) -> String {
    v.map_or_else(|| "n/a".to_string(), |g| units::growth(g as f64))
}

fn mark(p: &Process) -> char {
    if p.exited_at.is_some() {
        'x'
    } else if p.selected {
        '>'
    } else if p.shown {
        ' '
    } else {
        '*'
    }
}

fn process_details(o: &mut Out, s: &Snapshot) {
    for p in &s.processes {
        o.blank();
        let fw = p.framework.map_or("n/a", |f| f.label());
        o.para(
            0,
            &format!(
                "{} pid {} on GPU {} ({fw}, user {}), started {}, seen since {}{}",
                mark(p),
                p.pid,
                gpu_label(s, &p.gpu_uuid),
                or_na(p.user.as_deref()),
                or_na(p.started_at.as_deref()),
                p.first_seen_at,
                p.exited_at
                    .as_deref()
                    .map_or(String::new(), |e| format!(", exited {e}")),
            ),
        );
        o.para(2, &format!("command: {}", or_na(p.command.as_deref())));
        let settings = match &p.settings {
            None => "n/a".to_string(),
            Some(m) if m.is_empty() => "none of the known memory settings".to_string(),
            Some(m) => m
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
        };
        o.para(2, &format!("initial environment: {settings}"));
        if let Some(files) = &p.log {
            o.para(2, &format!("log followed: {}", files.join(", ")));
        }
        if let Some(c) = &p.container {
            o.para(2, &format!("in {c}"));
        }
        if let Some(pool) = &p.pool {
            let b = |v: Option<u64>| v.map_or_else(|| "n/a".to_string(), units::compact);
            // The screen's word for the framework ("torch"), not the JSON's ("pytorch").
            let framework = crate::sample::Framework::from_pool_name(&pool.framework)
                .map_or_else(|| pool.framework.clone(), |f| f.label().to_string());
            o.para(
                2,
                &format!(
                    "{framework} pool (probe): allocated {} of {} held, {} free ({} stranded), largest free block {}, limit {}",
                    b(pool.allocated),
                    b(pool.reserved),
                    b(pool.cached_free),
                    b(pool.stranded),
                    b(pool.largest_free_block),
                    b(pool.limit)
                ),
            );
        }
        o.para(2, &format!("device over time {}", history(&p.history)));
        if p.selected
            && let Some(t) = timeline(s, p)
        {
            o.0.push_str(&t);
        }
        reasons(o, 2, &p.unavailable);
    }
}

fn alerts(o: &mut Out, s: &Snapshot) {
    o.blank();
    o.row(&format!(
        "Alerts (newest first; {} older dropped)",
        s.alerts_dropped
    ));
    if s.alerts.is_empty() {
        o.row("  none");
    }
    for a in &s.alerts {
        let level = match a.level {
            super::LevelDoc::Failure => "failure",
            super::LevelDoc::Suspected => "suspected",
            super::LevelDoc::Info => "info",
            super::LevelDoc::Notice => "notice",
        };
        let mut head = format!("{} {level} {}", a.at, a.class);
        if let Some(c) = &a.confidence {
            head += &format!(" ({c})");
        }
        if let Some(u) = &a.gpu_uuid {
            head += &format!(" GPU {}", gpu_label(s, u));
        }
        if let Some(pid) = a.pid {
            head += &format!(" pid {pid}");
        }
        if let Some(job) = &a.job {
            head += &format!(" job {job}");
        }
        o.para(0, &head);
        o.para(2, &a.title);
        for e in &a.evidence {
            o.para(2, &format!("- {e}"));
        }
        if let Some(r) = &a.remedy {
            o.para(2, &format!("remedy: {r}"));
        }
    }
}
