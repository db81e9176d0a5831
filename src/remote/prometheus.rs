//! `--prometheus URL`: the fleet from a Prometheus server's instant-query API. gpumon's own
//! series (`gpumon_gpu_memory_*_bytes`, per-process `gpumon_process_*_memory_bytes`, whose
//! `job_id` and `rank` labels give back a rank's place in its job (`jobs.rs`),
//! `gpumon_alerts_active`) and, for hosts without gpumon, dcgm-exporter's
//! `DCGM_FI_DEV_FB_{USED,FREE,RESERVED}` (MiB), grouped by the `Hostname` label into one
//! `Sample` per host (by `instance` too where one `Hostname` comes from several servers); a
//! GPU's memory health and last Xid from either's series (`health.rs`).

mod gpu;
mod health;
mod jobs;

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::model::Alert;
use crate::model::Level;
use crate::sample::{Framework, Placement, ProcessKind, ProcessSample, Reading, Sample};

/// The overview's query: every GPU's memory and the alert kinds active now (no per-process
/// series but the ranks' device memory: a fleet of 1000 hosts answers in a fifth of the series).
/// Also each GPU's memory health and last Xid, gpumon's or dcgm-exporter's (`health.rs`), and
/// the jobs' launcher and world size (`jobs.rs`), so a job's ranks group across hosts.
pub const QUERY: &str = concat!(
    r#"{__name__=~"gpumon_gpu_memory_(total|used|free|reserved)_bytes|gpumon_job_(ranks|world_size)"#,
    r#"|DCGM_FI_DEV_FB_(USED|FREE|RESERVED)"#,
    r#"|gpumon_gpu_(ecc_errors_total|ecc_mode|remapped_rows|retired_pages|xid_last_code)"#,
    r#"|DCGM_FI_DEV_(ECC_(SBE|DBE)_(VOL|AGG)_TOTAL|(UN)?CORRECTABLE_REMAPPED_ROWS"#,
    r#"|ROW_REMAP_(PENDING|FAILURE)|RETIRED_(SBE|DBE|PENDING)|ECC_(CURRENT|PENDING)|XID_ERRORS)"#,
    r#""} or gpumon_alerts_active > 0 or gpumon_process_device_memory_bytes{job_id!=""}"#
);

/// The query for the processes of the host the screen has open, picked by its `selector`.
pub fn processes_query(selector: &str) -> String {
    format!(r#"{{__name__=~"gpumon_process_(device|virtual|resident)_memory_bytes",{selector}}}"#)
}

/// A label matcher `name="value"`, the value escaped as PromQL wants.
fn matcher(name: &str, value: &str) -> String {
    let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
    format!(r#"{name}="{escaped}""#)
}

const MIB: f64 = 1_048_576.0;
const NOT_EXPORTED: &str = "not in Prometheus (gpumon's per-process metrics are not exported)";

#[derive(Debug, Deserialize)]
struct Answer {
    status: String,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    data: Option<Data>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Data {
    result_type: String,
    result: Vec<Series>,
}

#[derive(Debug, Deserialize)]
struct Series {
    metric: BTreeMap<String, String>,
    /// `[unix seconds, "value"]`.
    value: (f64, String),
}

/// One host's share of the answer: its sample and its active alert kinds.
#[derive(Debug, Clone, PartialEq)]
pub struct HostReading {
    pub sample: Sample,
    pub alerts: Vec<Alert>,
    /// The label matchers that pick this host's series (`processes_query`).
    pub selector: String,
}

#[derive(Default)]
struct GpuAcc {
    index: u32,
    name: String,
    gpumon: BTreeMap<&'static str, u64>,
    dcgm: BTreeMap<&'static str, u64>,
    /// Memory health fields (`health::field`), from gpumon's or dcgm-exporter's series.
    health: BTreeMap<&'static str, u64>,
}

#[derive(Default)]
struct HostAcc {
    /// It has gpumon's own series (else only dcgm-exporter's).
    gpumon: bool,
    /// Its series carry a `Hostname` label (else it is named by `instance`).
    by_hostname: bool,
    at_ms: u64,
    gpus: BTreeMap<String, GpuAcc>,
    procs: BTreeMap<(String, u32), BTreeMap<&'static str, u64>>,
    labels: BTreeMap<(String, u32), BTreeMap<String, String>>,
    alerts: Vec<Alert>,
    jobs: jobs::Facts,
}

impl HostAcc {
    /// Takes in what another instance reported for the same host.
    fn merge(&mut self, other: HostAcc) {
        self.gpumon |= other.gpumon;
        self.by_hostname |= other.by_hostname;
        self.at_ms = self.at_ms.max(other.at_ms);
        for (uuid, g) in other.gpus {
            let mine = self.gpus.entry(uuid).or_default();
            mine.index = g.index;
            if !g.name.is_empty() {
                mine.name = g.name;
            }
            mine.gpumon.extend(g.gpumon);
            mine.dcgm.extend(g.dcgm);
            mine.health.extend(g.health);
        }
        self.procs.extend(other.procs);
        self.labels.extend(other.labels);
        self.alerts.extend(other.alerts);
        self.jobs.merge(other.jobs);
    }
}

/// Parses an `/api/v1/query` answer into one reading per host: by `Hostname` (else
/// `instance`), with gpumon's and dcgm-exporter's series of one node joined; when one
/// `Hostname` comes from more than one gpumon (or more than one dcgm-exporter), each
/// `instance` is a host of its own, named `Hostname (instance)`.
pub fn parse(bytes: &[u8]) -> Result<BTreeMap<String, HostReading>, String> {
    parse_all(&[bytes])
}

/// `parse` of several answers (the overview's and an open host's processes) as one.
pub fn parse_all(answers: &[&[u8]]) -> Result<BTreeMap<String, HostReading>, String> {
    let mut sources: BTreeMap<(String, String), HostAcc> = BTreeMap::new();
    for bytes in answers {
        for s in series(bytes)? {
            add(&mut sources, s);
        }
    }
    Ok(name_hosts(sources)
        .into_iter()
        .map(|(name, (acc, selector))| (name, reading(acc, selector)))
        .collect())
}

/// The series of one answer.
fn series(bytes: &[u8]) -> Result<Vec<Series>, String> {
    let answer: Answer = serde_json::from_slice(bytes)
        .map_err(|e| format!("not a Prometheus query answer ({e})"))?;
    if answer.status != "success" {
        let why = answer.error.unwrap_or_else(|| "no reason given".into());
        return Err(format!("Prometheus says {}: {why}", answer.status));
    }
    let data = answer.data.ok_or("a Prometheus answer without \"data\"")?;
    if data.result_type != "vector" {
        return Err(format!(
            "a {} where a vector was asked for",
            data.result_type
        ));
    }
    Ok(data.result)
}

/// One host per `Hostname` unless it collides (see `parse`), with its selector.
fn name_hosts(sources: BTreeMap<(String, String), HostAcc>) -> BTreeMap<String, (HostAcc, String)> {
    let mut by_name: BTreeMap<String, Vec<(String, HostAcc)>> = BTreeMap::new();
    for ((name, instance), acc) in sources {
        by_name.entry(name).or_default().push((instance, acc));
    }
    let mut hosts = BTreeMap::new();
    for (name, instances) in by_name {
        let gpumons = instances.iter().filter(|(_, a)| a.gpumon).count();
        if gpumons <= 1 && instances.len() - gpumons <= 1 {
            let mut one = HostAcc::default();
            for (_, acc) in instances {
                one.merge(acc);
            }
            let label = if one.by_hostname {
                "Hostname"
            } else {
                "instance"
            };
            let selector = matcher(label, &name);
            hosts.insert(name, (one, selector));
        } else {
            for (instance, acc) in instances {
                let selector = format!(
                    "{},{}",
                    matcher("Hostname", &name),
                    matcher("instance", &instance)
                );
                hosts.insert(format!("{name} ({instance})"), (acc, selector));
            }
        }
    }
    hosts
}

fn add(hosts: &mut BTreeMap<(String, String), HostAcc>, s: Series) {
    let label = |k: &str| s.metric.get(k).map(String::as_str);
    let instance = label("instance").unwrap_or_default();
    let Some(host) = label("Hostname").or(Some(instance).filter(|i| !i.is_empty())) else {
        return;
    };
    let Some(value) = s
        .value
        .1
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
    else {
        return;
    };
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let (bytes, at_ms) = (value.round() as u64, (s.value.0 * 1000.0).max(0.0) as u64);
    let acc = hosts
        .entry((host.to_string(), instance.to_string()))
        .or_default();
    acc.at_ms = acc.at_ms.max(at_ms);
    acc.by_hostname |= label("Hostname").is_some();
    let name = label("__name__").unwrap_or_default();
    acc.gpumon |= name.starts_with("gpumon_");
    let index = label("gpu").and_then(|g| g.parse().ok()).unwrap_or(0);
    let uuid = label("UUID").map_or_else(|| format!("gpu{index}"), str::to_string);
    let model = label("modelName");
    let gpu = |acc: &mut HostAcc, field: &'static str, v: u64, dcgm: bool| {
        let g = acc.gpus.entry(uuid.clone()).or_default();
        g.index = index;
        if let Some(m) = model {
            g.name = m.to_string();
        }
        if dcgm { &mut g.dcgm } else { &mut g.gpumon }.insert(field, v);
    };
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let mib = (value * MIB).round() as u64;
    if let Some(field) = health::field(name, |k| label(k).map(str::to_string)) {
        let g = acc.gpus.entry(uuid.clone()).or_default();
        g.index = index;
        if let Some(m) = model {
            g.name = m.to_string();
        }
        g.health.insert(field, bytes);
        if field == "xid" && bytes > 0 && name.starts_with("DCGM") {
            acc.alerts
                .push(health::last_xid(index, &uuid, bytes, at_ms));
        }
        return;
    }
    if acc.jobs.add(name, |k| label(k).map(str::to_string), bytes) {
        return;
    }
    match name {
        "gpumon_gpu_memory_total_bytes" => gpu(acc, "total", bytes, false),
        "gpumon_gpu_memory_used_bytes" => gpu(acc, "used", bytes, false),
        "gpumon_gpu_memory_free_bytes" => gpu(acc, "free", bytes, false),
        "gpumon_gpu_memory_reserved_bytes" => gpu(acc, "reserved", bytes, false),
        "DCGM_FI_DEV_FB_USED" => gpu(acc, "used", mib, true),
        "DCGM_FI_DEV_FB_FREE" => gpu(acc, "free", mib, true),
        "DCGM_FI_DEV_FB_RESERVED" => gpu(acc, "reserved", mib, true),
        // `gpumon_alerts_active > 0` in the query: a comparison drops the metric's name. One
        // alert a kind: the same kind from several series (another job or instance scraping the
        // same host) is one condition.
        "gpumon_alerts_active" | ""
            if bytes > 0
                && label("kind").is_some()
                && !acc
                    .alerts
                    .iter()
                    .any(|a| Some(a.class.as_str()) == label("kind")) =>
        {
            acc.alerts.push(Alert {
                at_ms,
                gpu_uuid: None,
                pid: None,
                level: Level::Suspected,
                class: label("kind").unwrap_or("unknown").to_string(),
                confidence: None,
                title: format!(
                    "{} active (from Prometheus)",
                    label("kind").unwrap_or("alert")
                ),
                evidence: vec![format!("gpumon_alerts_active = {bytes}")],
                remedy: None,
                job: None,
            });
        }
        process => {
            let Some(pid) = label("pid").and_then(|p| p.parse::<u32>().ok()) else {
                return;
            };
            let field = match process {
                "gpumon_process_device_memory_bytes" => "device",
                "gpumon_process_virtual_memory_bytes" => "vms",
                "gpumon_process_resident_memory_bytes" => "rss",
                _ => return,
            };
            let key = (uuid.clone(), pid);
            acc.procs
                .entry(key.clone())
                .or_default()
                .insert(field, bytes);
            acc.labels.entry(key).or_insert_with(|| s.metric.clone());
        }
    }
}

fn reading(acc: HostAcc, selector: String) -> HostReading {
    let mut processes = Vec::new();
    for ((uuid, pid), fields) in acc.procs {
        let labels = acc.labels.get(&(uuid.clone(), pid));
        let text = |k: &str| {
            labels
                .and_then(|l| l.get(k))
                .filter(|v| !v.is_empty())
                .map_or_else(
                    || Reading::na(format!("no {k} label")),
                    |v| Reading::Value(v.clone()),
                )
        };
        let bytes = |k: &str| {
            fields
                .get(k)
                .map_or_else(|| Reading::na(NOT_EXPORTED), |v| Reading::Value(*v))
        };
        let command = match text("command") {
            Reading::Value(c) => Reading::Value(c),
            Reading::Unavailable(_) => text("exe"),
        };
        let framework = labels
            .and_then(|l| l.get("framework"))
            .and_then(|f| serde_json::from_value::<Framework>(f.as_str().into()).ok());
        processes.push(ProcessSample {
            pid,
            gpu_uuid: uuid,
            kind: ProcessKind::Compute,
            device_memory: bytes("device"),
            start_time: Reading::na("not in Prometheus metrics"),
            user: text("user"),
            command,
            vms: bytes("vms"),
            rss: bytes("rss"),
            framework: framework.map_or_else(|| Reading::na("no framework label"), Reading::Value),
            settings: Reading::na("not in Prometheus metrics"),
            log: Reading::na("not in Prometheus metrics"),
            pool: Reading::na("not in Prometheus metrics"),
            util: Reading::na("not in Prometheus metrics"),
            gpu_instance_id: None,
            compute_instance_id: None,
            container: match text("container") {
                Reading::Value(c) => Reading::Value(Placement {
                    short: c.clone(),
                    full: c,
                    namespace_pid: None,
                }),
                Reading::Unavailable(r) => Reading::Unavailable(r),
            },
            rank: acc.jobs.rank(labels),
        });
    }
    HostReading {
        sample: Sample {
            at_ms: acc.at_ms,
            gpus: acc
                .gpus
                .into_iter()
                .map(|(uuid, g)| gpu::sample(uuid, g))
                .collect(),
            processes,
            ..Default::default()
        },
        alerts: acc.alerts,
        selector,
    }
}
