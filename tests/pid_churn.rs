//! PID churn: a recording whose every sample lists 1,500 new PIDs is replayed by `explain`,
//! `snapshot --replay` and `serve --replay` keeping at most the latest sample's processes and
//! the 1,000 latest to exit (not every PID ever seen), and `diff` matches snapshots of thousands
//! of processes (its cost is measured by scripts/bench_pid_churn.py, not here).

#[path = "common/churn.rs"]
mod churn;
#[path = "common/serve.rs"]
mod serve;

use assert_cmd::Command;

const PER_SAMPLE: u64 = 1500;
/// `model::machine::exits::MAX_EXITED`.
const MAX_EXITED: usize = 1000;

fn gpumon() -> Command {
    let mut c = Command::cargo_bin("gpumon").unwrap();
    c.env("GPUMON_NVML_LIB", "/nonexistent/libnvidia-ml.so.1");
    c.timeout(std::time::Duration::from_secs(120));
    c
}

#[test]
fn a_replay_keeps_what_is_bounded_not_every_pid_seen() {
    let dir = tempfile::tempdir().unwrap();
    let rec = churn::recording(dir.path(), 20, PER_SAMPLE);
    let out = gpumon()
        .args(["snapshot", "--replay"])
        .arg(&rec)
        .args(["--format", "json"])
        .assert()
        .success();
    let out = out.get_output();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let procs = doc["processes"].as_array().unwrap();
    let exited = procs.iter().filter(|p| !p["exited_at"].is_null()).count();
    assert_eq!(
        procs.len() - exited,
        PER_SAMPLE as usize,
        "the last sample's"
    );
    assert_eq!(exited, MAX_EXITED, "the latest to exit, at most");

    gpumon()
        .args(["snapshot", "--replay"])
        .arg(&rec)
        .args(["--format", "text"])
        .assert()
        .success();
    gpumon().arg("explain").arg(&rec).assert().success();

    let server = serve::Server::replayed(&rec);
    let r = server.get("/metrics", &[]);
    assert_eq!(r.status, 200);
    let series = r
        .body
        .lines()
        .filter(|l| l.starts_with("gpumon_process_device_memory_bytes{"))
        .count();
    assert!(
        series <= PER_SAMPLE as usize + MAX_EXITED,
        "{series} process series"
    );
}

#[test]
fn diff_matches_thousands_of_processes() {
    let dir = tempfile::tempdir().unwrap();
    let mut snaps = Vec::new();
    for (side, first) in [("a", 100_000), ("b", 102_000)] {
        let rec = churn::one_sample(dir.path(), &format!("{side}.ndjson"), first, 4000);
        let snap = dir.path().join(format!("{side}.json"));
        gpumon()
            .args(["snapshot", "--replay"])
            .arg(&rec)
            .arg("--output")
            .arg(&snap)
            .assert()
            .success();
        snaps.push(snap);
    }
    let out = gpumon()
        .args(["diff", "--format", "json"])
        .args(&snaps)
        .assert()
        .success();
    let out = out.get_output();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // 2,000 on each side only (pids 100000-101999 on A, 104000-105999 on B), each said once;
    // the 2,000 alike are matched, with nothing to say.
    let alone: std::collections::BTreeSet<&str> = doc["differences"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["topic"] == "process_on_one_side")
        .map(|d| d["subject"].as_str().unwrap())
        .collect();
    assert_eq!(alone.len(), 4000);
    assert!(alone.contains("torch `python3 job.py --task 100000`"));
    assert!(!alone.contains("torch `python3 job.py --task 102000`"));
}
