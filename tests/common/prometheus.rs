//! A real Prometheus for the serve tests: `GPUMON_TEST_PROMETHEUS` names the binary (`.ci/run`
//! unpacks Debian's package; without it a test is skipped, unless `CI=true`), started on a free
//! loopback port with a configuration given as text, and queried over its HTTP API.
#![allow(dead_code, reason = "each test file uses the part it needs")]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use super::serve::{Guard, Reply, exchange};

/// The prometheus binary, or `None` (the test is then skipped) outside CI.
pub fn binary() -> Option<OsString> {
    let found = std::env::var_os("GPUMON_TEST_PROMETHEUS");
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true: GPUMON_TEST_PROMETHEUS must name a prometheus binary (.ci/run unpacks Debian's)"
        );
        eprintln!("skipped: set GPUMON_TEST_PROMETHEUS to a prometheus binary to run this test");
    }
    found
}

/// Prometheus with `config` (YAML) and its data under `dir`; its log in `dir/prometheus.log`.
pub fn start(binary: &OsString, dir: &Path, config: &str) -> (Guard, SocketAddr) {
    let port = free_port();
    let file = dir.join("prometheus.yml");
    std::fs::write(&file, config).unwrap();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let child = Command::new(binary)
        .arg(format!("--config.file={}", file.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("tsdb").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("prometheus starts");
    (Guard(child), ([127, 0, 0, 1], port).into())
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The query's result vector, as (labels, value).
pub fn query(prometheus: SocketAddr, expr: &str) -> Vec<(BTreeMap<String, String>, f64)> {
    let encoded: String = expr
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    // HTTP/1.0: the answer comes whole, not chunked, and the connection closes after it.
    let raw = format!("GET /api/v1/query?query={encoded} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    let Some(reply) = exchange(prometheus, raw.as_bytes())
        .ok()
        .and_then(|b| Reply::parse(&b))
    else {
        return Vec::new(); // Not listening yet.
    };
    let Ok(doc) = serde_json::from_str::<Value>(&reply.body) else {
        return Vec::new();
    };
    doc["data"]["result"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let labels = serde_json::from_value(r["metric"].clone()).unwrap();
            (labels, r["value"][1].as_str().unwrap().parse().unwrap())
        })
        .collect()
}
