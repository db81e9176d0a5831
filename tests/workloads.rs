//! The real-workload corpus (H100 recordings of real training and inference jobs, made by
//! `scripts/gpu/workloads/corpus.py`) replayed through the pipeline by `gpumon explain`: each
//! recording raises exactly the alerts in its `expected.txt` (time, level, class, pid), so a rule
//! change that adds a false alarm, loses a warning or moves one later fails here. Whether those
//! alerts are right is the alert benchmark's judgement against the jobs' own figures
//! (`scripts/alert_bench.py score`, run by `.ci/run`).

use std::path::{Path, PathBuf};

use assert_cmd::Command;

const CORPUS: &str = "tests/fixtures/workloads";

fn runs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(CORPUS)
        .expect("the corpus fixtures")
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("recording.ndjson.zst").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// "AT_MS LEVEL CLASS PID" for each alert `gpumon explain` raised replaying `dir`'s recording.
fn raised(dir: &Path) -> Vec<String> {
    let out = Command::cargo_bin("gpumon")
        .unwrap()
        .env("GPUMON_NVML_LIB", "/nonexistent/libnvidia-ml.so.1")
        .args(["explain", "--format", "json"])
        .arg(dir.join("recording.ndjson.zst"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["recordings"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["alerts"].as_array().unwrap().clone())
        .map(|a| {
            let pid = a["pid"].as_u64().map_or("-".into(), |p| p.to_string());
            format!(
                "{} {} {} {pid}",
                a["at_ms"],
                a["level"].as_str().unwrap(),
                a["class"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn every_corpus_recording_raises_exactly_its_expected_alerts() {
    let dirs = runs();
    assert!(dirs.len() >= 16, "the corpus has {} runs", dirs.len());
    let mut wrong = Vec::new();
    for dir in &dirs {
        let expected: Vec<String> = std::fs::read_to_string(dir.join("expected.txt"))
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect();
        let got = raised(dir);
        if got != expected {
            wrong.push(format!(
                "{}:\n  expected {expected:#?}\n  got {got:#?}",
                dir.display()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn no_healthy_run_raises_a_warning() {
    for dir in runs() {
        let truth = std::fs::read_to_string(dir.join("truth.json")).unwrap();
        let truth: serde_json::Value = serde_json::from_str(&truth).unwrap();
        if truth["healthy"] != serde_json::Value::Bool(true) {
            continue;
        }
        let warnings: Vec<String> = raised(&dir)
            .into_iter()
            .filter(|a| a.contains(" suspected ") || a.contains(" failure "))
            .collect();
        assert!(warnings.is_empty(), "{}: {warnings:?}", dir.display());
    }
}
