//! Unit tests of the serve module: the encoder on hand-made snapshots, negotiation, counting.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::json;

use super::exposition;
use super::metrics::{self, Select};
use super::{Published, count_failures};
use crate::snapshot::Snapshot;

const UUID: &str = "GPU-00000000-0000-0000-0000-000000000001";
const ALL: Select = Select {
    processes: true,
    cmdline: false,
};

fn process(pid: u32, exited: bool, extra: serde_json::Value) -> serde_json::Value {
    let mut p = json!({
        "pid": pid, "gpu_uuid": UUID, "kind": "compute", "started_at": null,
        "user": "ada", "command": "/usr/bin/python3 train.py --secret=hunter2",
        "framework": "pytorch", "device_memory": 1000 + u64::from(pid), "peak": null,
        "vms": 5000, "rss": null, "growth_bytes_per_s": null, "settings": null,
        "shown": !exited, "selected": false, "first_seen_at": "2026-11-22T12:00:00.000Z",
        "exited_at": if exited { json!("2026-11-22T12:00:05.000Z") } else { json!(null) },
        "history": [], "unavailable": { "rss": "permission denied" }
    });
    p.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    p
}

fn snapshot(processes: Vec<serde_json::Value>, alerts: Vec<serde_json::Value>) -> Snapshot {
    let doc = json!({
        "schema": "gpumon.snapshot/1", "taken_at": "2026-11-22T12:00:10.000Z",
        "taken_at_ms": 1_795_348_810_000_u64, "gpumon_version": "9.9.9",
        "machine": { "host": "node\"7\"\nx", "kernel": null, "driver_version": null,
                     "nvml_version": null, "cuda_version": null },
        "view": { "interval_ms": 1000, "history_ms": 600_000, "source": { "state": "running" },
                  "last_sample_at": null, "paused": false, "filter": null,
                  "sort": "device_memory", "focus": null },
        "gpus": [{ "index": 3, "uuid": UUID, "name": "NVIDIA H100", "pci_bus_id": null,
                   "status": { "state": "ok" },
                   "memory": { "total": 8000, "used": 3000, "free": 4500, "reserved": 500,
                               "processes": 2000, "other": 1000 },
                   "utilization_percent": 42, "temperature_c": null, "power_mw": 123_456,
                   "processes_without_memory": 0, "used_history": [],
                   "unavailable": { "temperature_c": "not supported" } }],
        "processes": processes, "alerts": alerts, "alerts_dropped": 0
    });
    serde_json::from_value(doc).unwrap()
}

fn alert(class: &str, level: &str, pid: Option<u32>, at: &str) -> serde_json::Value {
    json!({ "at": at, "level": level, "class": class, "confidence": null, "gpu_uuid": UUID,
            "pid": pid, "title": "t", "evidence": [], "remedy": null })
}

fn encode(s: Snapshot, select: Select) -> String {
    let ooms = BTreeMap::from([("fragmentation".to_string(), 2)]);
    let p = Published::new(s, None, ooms, None);
    metrics::encode(Arc::new(p), Some(1.5), select)
}

/// The sample lines of one metric.
fn samples<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    text.lines()
        .filter(|l| l.strip_prefix(name).is_some_and(|r| r.starts_with('{')))
        .collect()
}

#[test]
fn gpu_series_carry_dcgm_labels_base_units_and_skip_absent_readings() {
    let text = encode(snapshot(vec![], vec![]), ALL);
    let labels =
        format!(r#"Hostname="node\"7\"\nx",gpu="3",UUID="{UUID}",modelName="NVIDIA H100""#);
    for (name, value) in [
        ("gpumon_gpu_memory_total_bytes", "8000"),
        ("gpumon_gpu_memory_used_bytes", "3000"),
        ("gpumon_gpu_memory_free_bytes", "4500"),
        ("gpumon_gpu_memory_reserved_bytes", "500"),
        ("gpumon_gpu_utilization_ratio", "0.42"),
        ("gpumon_gpu_power_watts", "123.456"),
    ] {
        assert_eq!(
            samples(&text, name),
            [format!("{name}{{{labels}}} {value}")],
            "{text}"
        );
    }
    assert!(
        samples(&text, "gpumon_gpu_temperature_celsius").is_empty(),
        "absent is not zero"
    );
    assert!(text.contains("# UNIT gpumon_gpu_memory_total_bytes bytes\n"));
    assert!(text.ends_with("# EOF\n"));
    assert_eq!(
        samples(&text, "gpumon_build_info"),
        [r#"gpumon_build_info{Hostname="node\"7\"\nx",version="9.9.9"} 1"#]
    );
    assert_eq!(samples(&text, "gpumon_last_sample_age_seconds").len(), 1);
}

#[test]
fn running_processes_only_without_the_command_line_unless_asked() {
    let pool = json!({ "pool": { "framework": "pytorch", "allocated": 10, "reserved": 20,
        "cached_free": 10, "stranded": 5, "largest_free_block": null, "limit": null },
        "container": "k8s:3f2a/trainer" });
    let s = snapshot(
        vec![process(11, false, pool), process(12, true, json!({}))],
        vec![],
    );
    let text = encode(s.clone(), ALL);
    let device = samples(&text, "gpumon_process_device_memory_bytes");
    assert_eq!(device.len(), 1, "the exited process has no series: {text}");
    assert!(device[0].contains(r#"pid="11",exe="python3",user="ada",framework="pytorch",container="k8s:3f2a/trainer",job_id="",rank=""} 1011"#), "{}", device[0]);
    assert!(!text.contains("hunter2") && !text.contains("command="));
    assert_eq!(
        samples(&text, "gpumon_process_resident_memory_bytes").len(),
        0
    );
    assert!(samples(&text, "gpumon_process_pool_stranded_bytes")[0].ends_with("} 5"));
    assert!(samples(&text, "gpumon_process_pool_limit_bytes").is_empty());

    let exposed = encode(
        s.clone(),
        Select {
            processes: true,
            cmdline: true,
        },
    );
    assert!(
        exposed.contains(r#"rank="",command="/usr/bin/python3 train.py --secret=hunter2"} 1011"#)
    );
    let none = encode(
        s,
        Select {
            processes: false,
            cmdline: true,
        },
    );
    assert!(!none.contains("gpumon_process_") && !none.contains("hunter2"));
}

#[test]
fn failures_are_counted_once_and_active_alerts_follow_their_process() {
    let alerts = vec![
        alert(
            "growth-step",
            "suspected",
            Some(11),
            "2026-11-22T12:00:09.000Z",
        ),
        alert(
            "fragmentation",
            "failure",
            Some(12),
            "2026-11-22T12:00:08.000Z",
        ),
        alert(
            "time-to-full",
            "suspected",
            None,
            "2026-11-22T11:00:00.000Z",
        ),
    ];
    let s = snapshot(
        vec![process(11, false, json!({})), process(12, true, json!({}))],
        alerts,
    );
    let text = encode(s.clone(), ALL);
    let line =
        |kind: &str| format!(r#"gpumon_alerts_active{{Hostname="node\"7\"\nx",kind="{kind}"}}"#);
    assert!(
        text.contains(&format!("{} 1\n", line("growth-step"))),
        "{text}"
    );
    assert!(text.contains(&format!("{} 0\n", line("fragmentation"))));
    assert!(
        text.contains(&format!("{} 0\n", line("time-to-full"))),
        "older than the history"
    );
    // Its help says exactly what it counts: every level, the latest 200, which are active.
    assert!(
        text.contains(
            "# HELP gpumon_alerts_active Alerts of any level (failure, suspected, info, notice) \
             among the latest 200 the server keeps, by class (kind): those whose process still \
             runs, or, for an alert naming no process, raised in the last 10 minutes; a class \
             whose alerts are all past reads 0.\n"
        ),
        "{text}"
    );
    assert!(text.contains("# TYPE gpumon_oom_failures counter\n"));
    assert!(
        text.contains(r#"gpumon_oom_failures_total{Hostname="node\"7\"\nx",class="pool-limit"} 0"#)
    );

    let (mut ooms, mut counted) = (BTreeMap::new(), 0);
    count_failures(&mut ooms, &mut counted, &s);
    count_failures(&mut ooms, &mut counted, &s);
    assert_eq!(ooms, BTreeMap::from([("fragmentation".to_string(), 1)]));
    let mut later = s;
    later.alerts.insert(
        0,
        serde_json::from_value(alert("driver", "failure", None, "2026-11-22T12:00:10.000Z"))
            .unwrap(),
    );
    later.alerts.pop();
    later.alerts_dropped = 1;
    count_failures(&mut ooms, &mut counted, &later);
    assert_eq!(ooms.get("driver"), Some(&1));
    assert_eq!(ooms.get("fragmentation"), Some(&1));
}

#[test]
fn negotiation_and_the_classic_format() {
    let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    assert!(exposition::wants_openmetrics(Some(prometheus)));
    for other in [
        None,
        Some("text/plain"),
        Some("*/*"),
        Some("application/openmetrics-text;q=0"),
    ] {
        assert!(!exposition::wants_openmetrics(other), "{other:?}");
    }
    let text = encode(snapshot(vec![], vec![]), ALL);
    let classic = exposition::to_classic(&text);
    assert!(!classic.contains("# EOF") && !classic.contains("# UNIT"));
    assert!(classic.contains("# TYPE gpumon_oom_failures_total counter\n"));
    assert!(classic.contains("# HELP gpumon_oom_failures_total "));
    assert_eq!(
        classic.lines().filter(|l| !l.starts_with('#')).count(),
        text.lines().filter(|l| !l.starts_with('#')).count()
    );
}

#[test]
fn serve_listens_on_loopback_by_default_and_checks_its_flags() {
    use crate::cli::{Cli, Command};
    use clap::Parser;
    let cli = Cli::try_parse_from(["gpumon", "serve", "--demo", "--speed", "5"]).unwrap();
    let Some(Command::Serve(args)) = cli.command else {
        panic!("not serve: {cli:?}")
    };
    assert_eq!(args.listen.to_string(), "127.0.0.1:9477");
    assert!(!args.no_process_metrics && !args.expose_cmdline && args.token_file.is_none());
    for bad in [
        &["gpumon", "serve", "--speed", "2"][..],
        &["gpumon", "serve", "--demo", "--replay", "x"],
        &["gpumon", "serve", "--listen", "localhost"],
        &["gpumon", "serve", "--interval", "10ms"],
    ] {
        assert!(Cli::try_parse_from(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn the_compact_snapshot_keeps_each_processes_latest_point_only() {
    let points = json!([{ "at_ms": 1, "value": 10 }, { "at_ms": 2, "value": 20 },
                        { "at_ms": 3, "value": null }]);
    let s = snapshot(
        vec![
            process(1, false, json!({ "history": points })),
            process(2, false, json!({})),
        ],
        vec![],
    );
    let p = Published::new(s.clone(), None, BTreeMap::new(), None);
    let full: Snapshot = serde_json::from_slice(&p.json()).unwrap();
    assert_eq!(full, s);
    // With a snapshot of days, the whole document carries its tiers; `?tiers=0` does not.
    let tier = gpumon_tier();
    let mut days = s.clone();
    days.processes[0].history_tiers = vec![tier.clone()];
    let p = Published::new(
        s.clone(),
        Some(std::sync::Arc::new(days)),
        BTreeMap::new(),
        None,
    );
    let full: Snapshot = serde_json::from_slice(&p.json()).unwrap();
    assert_eq!(full.processes[0].history_tiers, vec![tier]);
    assert!(full.processes[1].history_tiers.is_empty());
    let fine: Snapshot = serde_json::from_slice(&p.fine_json()).unwrap();
    assert_eq!(fine, s);
    let compact: Snapshot = serde_json::from_slice(&p.compact_json()).unwrap();
    assert_eq!(compact.processes[0].history, s.processes[0].history[2..]);
    assert!(compact.processes[1].history.is_empty());
    assert_eq!(compact.gpus, s.gpus);
}

#[test]
fn memory_health_series_with_the_gpu_labels_and_nothing_for_what_is_na() {
    let mut s = snapshot(vec![], vec![]);
    s.gpus[0].health = Some(
        serde_json::from_value(json!({
            "ecc_mode": { "current": true, "pending": false },
            "ecc_volatile": { "corrected": 0, "uncorrected": 2 },
            "ecc_aggregate": null,
            "remapped_rows": { "corrected": 1, "uncorrected": 3, "pending": true, "failure": false },
            "retired_pages": null,
            "unavailable": { "retired_pages": "not supported on this GPU",
                             "ecc_aggregate": "unknown driver error" }
        }))
        .unwrap(),
    );
    s.gpus[0].xid = Some(crate::snapshot::XidDoc {
        count: 2,
        last_code: Some(48),
        last_at: "2026-11-22T12:00:07.000Z".into(),
    });
    let text = encode(s, ALL);
    let gpu = format!(r#"Hostname="node\"7\"\nx",gpu="3",UUID="{UUID}",modelName="NVIDIA H100""#);
    let lines = |name: &str| samples(&text, name).join("\n");
    assert_eq!(
        lines("gpumon_gpu_ecc_errors_total"),
        format!(
            "gpumon_gpu_ecc_errors_total{{{gpu},counter=\"volatile\",kind=\"corrected\"}} 0\n\
             gpumon_gpu_ecc_errors_total{{{gpu},counter=\"volatile\",kind=\"uncorrected\"}} 2"
        ),
        "zeros are values, the aggregate n/a has no series"
    );
    assert_eq!(
        lines("gpumon_gpu_remapped_rows"),
        [
            "corrected\"} 1",
            "uncorrected\"} 3",
            "pending\"} 1",
            "failure\"} 0"
        ]
        .map(|s| format!("gpumon_gpu_remapped_rows{{{gpu},state=\"{s}"))
        .join("\n")
    );
    assert_eq!(
        lines("gpumon_gpu_ecc_mode"),
        format!(
            "gpumon_gpu_ecc_mode{{{gpu},mode=\"current\"}} 1\ngpumon_gpu_ecc_mode{{{gpu},mode=\"pending\"}} 0"
        )
    );
    assert!(samples(&text, "gpumon_gpu_retired_pages").is_empty());
    assert_eq!(
        lines("gpumon_gpu_xid_last_code"),
        format!("gpumon_gpu_xid_last_code{{{gpu}}} 48")
    );
    assert_eq!(
        lines("gpumon_gpu_xid_last_timestamp_seconds"),
        format!("gpumon_gpu_xid_last_timestamp_seconds{{{gpu}}} 1795348807.0")
    );
    assert_eq!(
        lines("gpumon_gpu_xid_events_total"),
        format!("gpumon_gpu_xid_events_total{{{gpu}}} 2")
    );
    assert!(text.contains(
        r#"gpumon_memory_faults_total{Hostname="node\"7\"\nx",class="illegal-address"} 0"#
    ));
    // A GPU without health readings (an older gpumon, a Prometheus-read host) has no such series.
    let plain = encode(snapshot(vec![], vec![]), ALL);
    assert!(samples(&plain, "gpumon_gpu_ecc_mode").is_empty());
    assert!(samples(&plain, "gpumon_gpu_xid_events_total").is_empty());
}

/// Issue 40: a log read behind its writer has a backlog gauge, labelled with the log (escaped as
/// any label value); a log read to its end has none.
#[test]
fn a_log_read_behind_has_a_backlog_gauge() {
    let plain = encode(snapshot(vec![], vec![]), ALL);
    assert!(samples(&plain, "gpumon_log_backlog_bytes").is_empty());
    assert!(plain.contains("# TYPE gpumon_log_backlog_bytes gauge"));
    let mut s = snapshot(vec![], vec![]);
    s.logs_behind = vec![crate::snapshot::logs::LogBehindDoc {
        log: "/w/tr\"ain.log".into(),
        bytes: 222_298_112,
        since: Some("2026-11-22T12:00:00.000Z".into()),
    }];
    let text = encode(s, ALL);
    assert_eq!(
        samples(&text, "gpumon_log_backlog_bytes"),
        [r#"gpumon_log_backlog_bytes{Hostname="node\"7\"\nx",log="/w/tr\"ain.log"} 222298112"#]
    );
}

fn gpumon_tier() -> crate::snapshot::TierDoc {
    crate::snapshot::TierDoc {
        bucket_ms: 10_000,
        start_ms: 0,
        min: vec![Some(1024), None],
        max: vec![Some(4096), None],
        last: vec![Some(2048), None],
    }
}
