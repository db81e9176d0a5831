//! The Prometheus alerting rules, their unit tests and the Grafana dashboard: promtool checks
//! (when `GPUMON_TEST_PROMTOOL` names promtool; required when `CI=true`) and the metric names used.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Every metric `gpumon serve` exposes; the assets may use no other `gpumon_` name.
const METRICS: &[&str] = &[
    "gpumon_gpu_memory_total_bytes",
    "gpumon_gpu_memory_used_bytes",
    "gpumon_gpu_memory_free_bytes",
    "gpumon_gpu_memory_reserved_bytes",
    "gpumon_gpu_utilization_ratio",
    "gpumon_gpu_temperature_celsius",
    "gpumon_gpu_power_watts",
    "gpumon_gpu_ecc_mode",
    "gpumon_gpu_ecc_errors_total",
    "gpumon_gpu_remapped_rows",
    "gpumon_gpu_retired_pages",
    "gpumon_gpu_xid_last_code",
    "gpumon_gpu_xid_last_timestamp_seconds",
    "gpumon_gpu_xid_events_total",
    "gpumon_memory_faults_total",
    "gpumon_process_device_memory_bytes",
    "gpumon_process_virtual_memory_bytes",
    "gpumon_process_resident_memory_bytes",
    "gpumon_process_pool_allocated_bytes",
    "gpumon_process_pool_reserved_bytes",
    "gpumon_process_pool_stranded_bytes",
    "gpumon_process_pool_limit_bytes",
    "gpumon_process_pool_largest_free_block_bytes",
    "gpumon_jobs",
    "gpumon_jobs_omitted",
    "gpumon_job_ranks",
    "gpumon_job_world_size",
    "gpumon_job_device_memory_bytes",
    "gpumon_job_imbalance_ratio",
    "gpumon_job_grows_alone",
    "gpumon_oom_failures_total",
    "gpumon_alerts_active",
    "gpumon_last_sample_age_seconds",
    "gpumon_build_info",
];

fn asset(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// promtool from `GPUMON_TEST_PROMTOOL`; `None` (after saying why) when it is not set outside CI.
fn promtool() -> Option<PathBuf> {
    match std::env::var_os("GPUMON_TEST_PROMTOOL") {
        Some(p) => Some(PathBuf::from(p)),
        None if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true but GPUMON_TEST_PROMTOOL is not set (path to promtool)")
        }
        None => {
            eprintln!("skipped: set GPUMON_TEST_PROMTOOL to a promtool binary to run this test");
            None
        }
    }
}

fn run(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().expect("promtool or bash could not be started");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn promtool_checks_the_rules_their_unit_tests_and_the_example_config() {
    let Some(promtool) = promtool() else { return };
    let script = asset("scripts/check_prometheus_assets.sh");
    let (ok, out) = run(Command::new("bash").arg(script).arg(&promtool));
    assert!(ok, "{out}");
    assert!(out.contains("SUCCESS: 13 rules found"), "{out}");
}

#[test]
fn promtool_rejects_a_broken_rule_and_a_failing_unit_test() {
    let Some(promtool) = promtool() else { return };
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("broken.rules.yml");
    let broken = "groups:\n- name: x\n  rules:\n  - alert: X\n    expr: gpumon_alerts_active >\n";
    std::fs::write(&rules, broken).unwrap();
    let (ok, out) = run(Command::new(&promtool)
        .arg("check")
        .arg("rules")
        .arg(&rules));
    assert!(!ok, "promtool accepted a broken expression: {out}");

    // The real rules with a test that expects GpumonDown for a gpumon that is up.
    std::fs::copy(
        asset("assets/prometheus/gpumon.rules.yml"),
        dir.path().join("g.yml"),
    )
    .unwrap();
    let test = dir.path().join("t.yml");
    let wrong = "rule_files: [g.yml]\ntests:\n- interval: 1m\n  input_series:\n  - series: 'up{job=\"gpumon\",instance=\"a\"}'\n    values: '1x10'\n  alert_rule_test:\n  - eval_time: 5m\n    alertname: GpumonDown\n    exp_alerts: [{exp_labels: {severity: warning, job: gpumon, instance: a}}]\n";
    std::fs::write(&test, wrong).unwrap();
    let (ok, out) = run(Command::new(&promtool).arg("test").arg("rules").arg(&test));
    assert!(!ok, "promtool passed a unit test that should fail: {out}");
}

/// The `gpumon_…` names in a text, each once (a bare `gpumon_` in prose is no name).
fn metric_names(text: &str) -> Vec<String> {
    let mut names: Vec<String> = text
        .match_indices("gpumon_")
        .filter(|(i, _)| {
            let before = text[..*i].chars().next_back();
            !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        })
        .map(|(i, _)| {
            text[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        })
        .filter(|name: &String| name.len() > "gpumon_".len())
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn assets_use_only_the_metrics_gpumon_exposes() {
    for path in [
        "assets/prometheus/gpumon.rules.yml",
        "assets/prometheus/gpumon.rules.test.yml",
        "assets/grafana/gpumon-dashboard.json",
    ] {
        let text = std::fs::read_to_string(asset(path)).unwrap();
        let names = metric_names(&text);
        assert!(!names.is_empty(), "{path} uses no gpumon metric");
        for name in names {
            assert!(
                METRICS.contains(&name.as_str()),
                "{path}: unknown metric {name}"
            );
        }
    }
}

#[test]
fn dashboard_is_grafana_json_with_the_host_and_gpu_variables() {
    let text = std::fs::read_to_string(asset("assets/grafana/gpumon-dashboard.json")).unwrap();
    let d: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(d["schemaVersion"].as_u64().unwrap() >= 39);
    let vars: Vec<&str> = d["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    for want in ["DS_PROMETHEUS", "Hostname", "gpu"] {
        assert!(vars.contains(&want), "no variable {want} in {vars:?}");
    }
    let panels = d["panels"].as_array().unwrap();
    assert!(panels.len() >= 6);
    for p in panels {
        assert_eq!(p["datasource"]["uid"], "${DS_PROMETHEUS}", "{}", p["title"]);
        assert!(
            !p["targets"].as_array().unwrap().is_empty(),
            "{}",
            p["title"]
        );
    }
}

#[test]
fn dashboard_has_a_panel_per_distributed_job() {
    let text = std::fs::read_to_string(asset("assets/grafana/gpumon-dashboard.json")).unwrap();
    let d: serde_json::Value = serde_json::from_str(&text).unwrap();
    let var = d["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "job_id")
        .expect("a job_id variable");
    assert!(var["query"].as_str().unwrap().contains(r#"job_id!="""#));
    assert_eq!(
        (var["multi"].as_bool(), var["includeAll"].as_bool()),
        (Some(true), Some(true))
    );
    let repeated: Vec<&serde_json::Value> = d["panels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["repeat"] == "job_id")
        .collect();
    assert_eq!(repeated.len(), 1, "one panel repeated for each job");
    let exprs: Vec<&str> = repeated[0]["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["expr"].as_str().unwrap())
        .collect();
    assert!(
        exprs.iter().all(|e| e.contains(r#"job_id="$job_id""#)),
        "{exprs:?}"
    );
    assert!(
        exprs[0].starts_with("sum by (rank, Hostname, pid)"),
        "{exprs:?}"
    );
}
