//! A real Prometheus scrapes `gpumon serve` on 127.0.0.1 and its query API returns the values
//! of `gpumon snapshot` for the same recording (the demo up to its last sample with processes,
//! served fast so it has ended and stays still). `GPUMON_TEST_PROMETHEUS` names the prometheus
//! binary (`.ci/run` unpacks Debian's package); without it the test is skipped, unless `CI=true`.
//! And Prometheus scrapes `serve` over mutual TLS with basic auth, as the scrape_config of
//! docs/guide/serve.md says, with certificates made in the test.

#[path = "common/prometheus.rs"]
mod prometheus;
#[path = "common/serve.rs"]
mod serve;
#[path = "common/tls.rs"]
mod tls;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use prometheus::query;
use serde_json::Value;
use serve::{POLLS, Server};

/// The demo up to its last sample in which processes hold GPU memory.
fn recording(dir: &Path) -> std::path::PathBuf {
    let demo = std::fs::read_to_string("assets/demo.ndjson").unwrap();
    let lines: Vec<&str> = demo.lines().collect();
    let last = lines
        .iter()
        .rposition(|l| l.contains("\"processes\":[{"))
        .expect("the demo has processes");
    let path = dir.join("demo-part.ndjson");
    std::fs::write(&path, lines[..=last].join("\n") + "\n").unwrap();
    path
}

/// What the series must say, from `gpumon snapshot --replay`: (metric, key label value, value).
fn expected(snapshot: &Value) -> Vec<(String, String, f64)> {
    let mut out = Vec::new();
    for g in snapshot["gpus"].as_array().unwrap() {
        let uuid = g["uuid"].as_str().unwrap().to_string();
        let mut put = |name: &str, v: &Value, scale: f64| {
            if let Some(x) = v.as_f64() {
                out.push((format!("gpumon_gpu_{name}"), uuid.clone(), x * scale));
            }
        };
        for part in ["total", "used", "free", "reserved"] {
            put(&format!("memory_{part}_bytes"), &g["memory"][part], 1.0);
        }
        put("utilization_ratio", &g["utilization_percent"], 0.01);
        put("temperature_celsius", &g["temperature_c"], 1.0);
        put("power_watts", &g["power_mw"], 0.001);
    }
    for p in snapshot["processes"].as_array().unwrap() {
        if !p["exited_at"].is_null() {
            continue;
        }
        let pid = p["pid"].to_string();
        for (name, field) in [
            ("device_memory", "device_memory"),
            ("virtual_memory", "vms"),
            ("resident_memory", "rss"),
        ] {
            if let Some(x) = p[field].as_f64() {
                out.push((format!("gpumon_process_{name}_bytes"), pid.clone(), x));
            }
        }
        // The allocator probe's figures, where the process was probed (the demo's are).
        for part in [
            "allocated",
            "reserved",
            "stranded",
            "limit",
            "largest_free_block",
        ] {
            if let Some(x) = p["pool"][part].as_f64() {
                out.push((format!("gpumon_process_pool_{part}_bytes"), pid.clone(), x));
            }
        }
    }
    out
}

#[test]
fn prometheus_scrapes_the_values_of_the_snapshot() {
    let Some(prometheus) = prometheus::binary() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = recording(dir.path());
    let out = Command::new(env!("CARGO_BIN_EXE_gpumon"))
        .args(["snapshot", "--format", "json", "--replay"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut want: Value = serde_json::from_slice(&out.stdout).unwrap();
    let expect = expected(&want);
    assert!(
        expect
            .iter()
            .any(|(m, ..)| m.starts_with("gpumon_process_pool_")),
        "{expect:?}"
    );

    let server = Server::start(&["--replay", file.to_str().unwrap(), "--speed", "1000"]);
    server.wait_until("ok: the recording ended");
    // /snapshot is `gpumon snapshot`'s document (the source state aside: served, it has ended).
    let mut served: Value = serde_json::from_str(&server.get("/snapshot", &[]).body).unwrap();
    served["view"]["source"] = Value::Null;
    want["view"]["source"] = Value::Null;
    assert_eq!(served, want);

    let config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: gpumon\n    static_configs:\n      - targets: ['{}']\n",
        server.addr
    );
    let (_prometheus, api) = prometheus::start(&prometheus, dir.path(), &config);
    let selector =
        r#"{__name__=~"gpumon_(gpu|process)_.*_(bytes|ratio|celsius|watts)",job="gpumon"}"#;
    let mut got = Vec::new();
    for _ in 0..POLLS {
        got = query(api, selector);
        if got.len() >= expect.len() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default();
    assert_eq!(
        got.len(),
        expect.len(),
        "series: {got:?}\nprometheus log:\n{log}"
    );
    for (metric, key, value) in &expect {
        let found = got.iter().find(|(labels, _)| {
            labels["__name__"] == *metric
                && (labels.get("UUID") == Some(key) && !metric.starts_with("gpumon_process_")
                    || labels.get("pid") == Some(key))
        });
        let (labels, v) = found.unwrap_or_else(|| panic!("{metric} {key}: no series in {got:?}"));
        assert!(
            (v - value).abs() <= value.abs() * 1e-12,
            "{metric} {labels:?}: {v} != {value}"
        );
        assert_eq!(
            labels["Hostname"],
            want["machine"]["host"].as_str().unwrap()
        );
    }
    let up = query(api, r#"up{job="gpumon"}"#);
    assert_eq!(up.iter().map(|(_, v)| *v).collect::<Vec<_>>(), [1.0]);
    let info = query(api, "gpumon_build_info");
    assert_eq!(
        info.first().map(|(l, v)| (l["version"].as_str(), *v)),
        Some((env!("CARGO_PKG_VERSION"), 1.0))
    );
}

#[test]
fn prometheus_scrapes_over_mutual_tls_with_basic_auth() {
    let Some(prometheus) = prometheus::binary() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = tls::Ca::new("gpumon test CA");
    let (server_pair, prometheus_pair) = (ca.leaf("gpu-node"), ca.leaf("prometheus"));
    tls::write(d, "ca.pem", &ca.pem());
    tls::write(d, "node.pem", &server_pair.cert);
    tls::write(d, "node.key", &server_pair.key);
    tls::write(d, "prometheus.pem", &prometheus_pair.cert);
    tls::write(d, "prometheus.key", &prometheus_pair.key);
    let hash = bcrypt::hash("scrape-me", 4).unwrap();
    let web = tls::write(
        d,
        "web.yml",
        &format!(
            "tls_server_config:\n  cert_file: node.pem\n  key_file: node.key\n  \
             client_ca_file: ca.pem\n  client_auth_type: RequireAndVerifyClientCert\n\
             basic_auth_users:\n  prometheus: {hash}\n"
        ),
    );
    let server = Server::start(&["--demo", "--web-config", web.to_str().unwrap()]);
    let d = d.display();
    let config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  \
         - job_name: gpumon\n    scheme: https\n    tls_config:\n      ca_file: {d}/ca.pem\n      \
         cert_file: {d}/prometheus.pem\n      key_file: {d}/prometheus.key\n    basic_auth:\n      \
         username: prometheus\n      password: scrape-me\n    static_configs:\n      \
         - targets: ['{}']\n",
        server.addr
    );
    let (_prometheus, api) = prometheus::start(&prometheus, dir.path(), &config);
    let mut total = Vec::new();
    for _ in 0..POLLS {
        total = query(api, r#"gpumon_gpu_memory_total_bytes{job="gpumon"}"#);
        if !total.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default();
    assert!(
        !total.is_empty(),
        "no series scraped over TLS; prometheus log:\n{log}"
    );
    assert!(total.iter().all(|(_, v)| *v > 0.0), "{total:?}");
    let up = query(api, r#"up{job="gpumon"}"#);
    assert_eq!(up.iter().map(|(_, v)| *v).collect::<Vec<_>>(), [1.0]);
}
