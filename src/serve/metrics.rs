//! `/metrics`: the latest published snapshot, encoded at scrape time by a prometheus-client
//! `Collector` as OpenMetrics text (so a process that has exited simply has no series).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeGaugeValue, EncodeMetric, text};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};

use super::Published;

mod health;
pub mod jobs;
use crate::snapshot::{AlertDoc, Gpu, Process, Snapshot};

/// Failure classes whose counters exist from the start, so `increase()` sees the first one.
pub const FAILURE_CLASSES: [&str; 7] = [
    "fragmentation",
    "split",
    "pool-limit",
    "device-full",
    "driver",
    "leak",
    "unknown",
];

/// Which optional series a scrape carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Select {
    /// Per-process series (`--no-process-metrics` turns them off).
    pub processes: bool,
    /// The `command` label (`--expose-cmdline`).
    pub cmdline: bool,
}

/// The OpenMetrics text of one scrape; `age_s` is how long ago the last sample arrived.
pub fn encode(published: Arc<Published>, age_s: Option<f64>, select: Select) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Scrape {
        published,
        age_s,
        select,
    }));
    let mut out = String::new();
    text::encode(&mut out, &registry)
        .unwrap_or_else(|e| unreachable!("encoding into a String with valid names fails: {e}"));
    out
}

#[derive(Debug)]
struct Scrape {
    published: Arc<Published>,
    age_s: Option<f64>,
    select: Select,
}

type Labels<'a> = Vec<(&'static str, Cow<'a, str>)>;

impl Collector for Scrape {
    fn encode(&self, mut enc: DescriptorEncoder) -> fmt::Result {
        let s = &self.published.snapshot;
        let host = s.machine.host.as_deref().unwrap_or_default();
        gpus(&mut enc, s, host)?;
        if self.select.processes {
            processes(&mut enc, s, host, self.select.cmdline)?;
        }
        jobs::encode(&mut enc, s, host)?;
        let hostname = || vec![("Hostname", Cow::Borrowed(host))];
        let mut ooms: BTreeMap<&str, u64> = FAILURE_CLASSES.iter().map(|c| (*c, 0)).collect();
        ooms.extend(
            (self.published.ooms.iter())
                .filter(|(c, _)| FAILURE_CLASSES.contains(&c.as_str()))
                .map(|(c, n)| (c.as_str(), *n)),
        );
        let mut fam = enc.encode_descriptor(
            "gpumon_oom_failures",
            "Allocation failures read from followed logs since gpumon started, by class.",
            None,
            MetricType::Counter,
        )?;
        for (class, n) in ooms {
            let mut labels = hostname();
            labels.push(("class", class.into()));
            ConstCounter::new(n).encode(fam.encode_family(&labels)?)?;
        }
        health::faults(&mut enc, &self.published.ooms, host)?;
        let behind: Vec<(Labels, &u64)> = (s.logs_behind.iter())
            .map(|l| {
                let mut labels = hostname();
                labels.push(("log", l.log.as_str().into()));
                (labels, &l.bytes)
            })
            .collect();
        let help = "Bytes of a followed log on disk that gpumon has not read yet, while it reads \
                    behind the log's writer (a log read to its end has no series).";
        let bytes = Unit::Bytes;
        gauges(
            &mut enc,
            ("gpumon_log_backlog", help, Some(&bytes)),
            &behind,
            |b| Some(*b),
        )?;
        let active = active_alerts(s);
        let series: Vec<(Labels, &u64)> = active
            .iter()
            .map(|(kind, n)| {
                let mut labels = hostname();
                labels.push(("kind", Cow::Borrowed(*kind)));
                (labels, n)
            })
            .collect();
        let help = format!(
            "Alerts of any level (failure, suspected, info, notice) among the latest {} the \
             server keeps, by class (kind): those whose process still runs, or, for an alert \
             naming no process, raised in the last {} minutes; a class whose alerts are all \
             past reads 0.",
            crate::model::MAX_ALERTS,
            super::HISTORY_MS / 60_000
        );
        gauges(
            &mut enc,
            ("gpumon_alerts_active", &help, None),
            &series,
            |n| Some(*n),
        )?;
        let seconds = Unit::Seconds;
        let help = "Seconds since the server got its last sample.";
        let age = [(hostname(), &self.age_s)];
        gauges(
            &mut enc,
            ("gpumon_last_sample_age", help, Some(&seconds)),
            &age,
            |a| *a,
        )?;
        let mut info = hostname();
        info.push(("version", s.gpumon_version.as_str().into()));
        let help = "The gpumon that serves these metrics.";
        gauges(
            &mut enc,
            ("gpumon_build_info", help, None),
            &[(info, &())],
            |()| Some(1),
        )
    }
}

/// One family of gauges: each series' labels, and the item its value is read from (none: no
/// sample for that series).
fn gauges<T, V: EncodeGaugeValue>(
    enc: &mut DescriptorEncoder,
    (name, help, unit): (&str, &str, Option<&Unit>),
    series: &[(Labels<'_>, &T)],
    value: impl Fn(&T) -> Option<V>,
) -> fmt::Result {
    let mut fam = enc.encode_descriptor(name, help, unit, MetricType::Gauge)?;
    for (labels, item) in series {
        if let Some(v) = value(item) {
            ConstGauge::new(v).encode(fam.encode_family(labels)?)?;
        }
    }
    Ok(())
}

fn gpus(enc: &mut DescriptorEncoder, s: &Snapshot, host: &str) -> fmt::Result {
    let series: Vec<(Labels, &Gpu)> = s
        .gpus
        .iter()
        .map(|g| {
            let labels = vec![
                ("Hostname", Cow::Borrowed(host)),
                ("gpu", g.index.to_string().into()),
                ("UUID", g.uuid.as_str().into()),
                ("modelName", g.name.as_str().into()),
            ];
            (labels, g)
        })
        .collect();
    let (bytes, ratio, celsius, watts) = (
        Unit::Bytes,
        Unit::Other("ratio".into()),
        Unit::Celsius,
        Unit::Other("watts".into()),
    );
    let b = Some(&bytes);
    gauges(
        enc,
        ("gpumon_gpu_memory_total", "Device memory.", b),
        &series,
        |g| g.memory.as_ref().map(|m| m.total),
    )?;
    gauges(
        enc,
        (
            "gpumon_gpu_memory_used",
            "Device memory in use (NVML; excludes reserved where NVML reports it).",
            b,
        ),
        &series,
        |g| g.memory.as_ref().map(|m| m.used),
    )?;
    gauges(
        enc,
        ("gpumon_gpu_memory_free", "Device memory free.", b),
        &series,
        |g| g.memory.as_ref().map(|m| m.free),
    )?;
    gauges(
        enc,
        (
            "gpumon_gpu_memory_reserved",
            "Device memory reserved by the driver and firmware.",
            b,
        ),
        &series,
        |g| g.memory.as_ref().and_then(|m| m.reserved),
    )?;
    gauges(
        enc,
        (
            "gpumon_gpu_utilization",
            "Share of time a kernel ran over the last sample period (0 to 1).",
            Some(&ratio),
        ),
        &series,
        |g| g.utilization_percent.map(|p| f64::from(p) / 100.0),
    )?;
    gauges(
        enc,
        ("gpumon_gpu_temperature", "GPU temperature.", Some(&celsius)),
        &series,
        |g| g.temperature_c,
    )?;
    gauges(
        enc,
        ("gpumon_gpu_power", "Power draw.", Some(&watts)),
        &series,
        |g| g.power_mw.map(|mw| f64::from(mw) / 1000.0),
    )?;
    health::encode(enc, &series)
}

fn processes(enc: &mut DescriptorEncoder, s: &Snapshot, host: &str, cmdline: bool) -> fmt::Result {
    let ranks = jobs::RankLabels::of(s);
    let series: Vec<(Labels, &Process)> = s
        .processes
        .iter()
        .filter(|p| p.exited_at.is_none())
        .map(|p| {
            let gpu = s
                .gpu(&p.gpu_uuid)
                .map(|g| g.index.to_string())
                .unwrap_or_default();
            let mut labels = vec![
                ("Hostname", Cow::Borrowed(host)),
                ("gpu", gpu.into()),
                ("UUID", p.gpu_uuid.as_str().into()),
                ("pid", p.pid.to_string().into()),
                ("exe", exe(p.command.as_deref()).into()),
                ("user", p.user.as_deref().unwrap_or_default().into()),
                ("framework", framework(p)),
                (
                    "container",
                    p.container.as_deref().unwrap_or_default().into(),
                ),
            ];
            ranks.push(p, &mut labels);
            if cmdline {
                labels.push(("command", p.command.as_deref().unwrap_or_default().into()));
            }
            (labels, p)
        })
        .collect();
    let bytes = Unit::Bytes;
    let b = Some(&bytes);
    gauges(
        enc,
        (
            "gpumon_process_device_memory",
            "Device memory the process holds on this GPU.",
            b,
        ),
        &series,
        |p| p.device_memory,
    )?;
    gauges(
        enc,
        (
            "gpumon_process_virtual_memory",
            "Virtual memory size of the process.",
            b,
        ),
        &series,
        |p| p.vms,
    )?;
    gauges(
        enc,
        (
            "gpumon_process_resident_memory",
            "Resident host memory of the process.",
            b,
        ),
        &series,
        |p| p.rss,
    )?;
    gauges(
        enc,
        (
            "gpumon_process_pool_allocated",
            "Bytes in live tensors or buffers (allocator probe).",
            b,
        ),
        &series,
        |p| p.pool.as_ref()?.allocated,
    )?;
    gauges(
        enc,
        (
            "gpumon_process_pool_reserved",
            "Bytes the framework's pool holds from CUDA (allocator probe).",
            b,
        ),
        &series,
        |p| p.pool.as_ref()?.reserved,
    )?;
    gauges(
        enc,
        (
            "gpumon_process_pool_stranded",
            "Free pool bytes stuck in split blocks (allocator probe).",
            b,
        ),
        &series,
        |p| p.pool.as_ref()?.stranded,
    )?;
    gauges(
        enc,
        (
            "gpumon_process_pool_limit",
            "The pool's or process's memory limit (allocator probe).",
            b,
        ),
        &series,
        |p| p.pool.as_ref()?.limit,
    )?;
    gauges(
        enc,
        (
            "gpumon_process_pool_largest_free_block",
            "Largest free block in the pool (allocator probe).",
            b,
        ),
        &series,
        |p| p.pool.as_ref()?.largest_free_block,
    )
}

/// The executable's base name: the command line's first word without its directory.
fn exe(command: Option<&str>) -> &str {
    let first = command
        .and_then(|c| c.split_whitespace().next())
        .unwrap_or_default();
    first.rsplit_once('/').map_or(first, |(_, name)| name)
}

/// The framework gpumon detected, else the one the probe reports, else empty.
fn framework(p: &Process) -> Cow<'_, str> {
    let detected = p.framework.and_then(|f| match serde_json::to_value(f) {
        Ok(serde_json::Value::String(s)) => Some(s),
        _ => None,
    });
    match (detected, &p.pool) {
        (Some(name), _) => name.into(),
        (None, Some(pool)) => pool.framework.as_str().into(),
        (None, None) => Cow::Borrowed(""),
    }
}

/// Active alerts by kind (every kind in the list appears, 0 when none is active): an alert about
/// a process is active while that process runs; one about no process, for the history window.
fn active_alerts(s: &Snapshot) -> BTreeMap<&str, u64> {
    let running: HashSet<u32> = s
        .processes
        .iter()
        .filter(|p| p.exited_at.is_none())
        .map(|p| p.pid)
        .collect();
    let recent = |a: &AlertDoc| {
        humantime::parse_rfc3339(&a.at)
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .and_then(|d| u64::try_from(d.as_millis()).ok())
            .is_some_and(|ms| ms.saturating_add(s.view.history_ms) >= s.taken_at_ms)
    };
    let mut out = BTreeMap::new();
    for a in &s.alerts {
        let active = match a.pid {
            Some(pid) => running.contains(&pid),
            None => recent(a),
        };
        *out.entry(a.class.as_str()).or_default() += u64::from(active);
    }
    out
}
