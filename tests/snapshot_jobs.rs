//! Snapshots carry the distributed jobs: `gpumon snapshot --replay` of a recording holding the
//! two ranks of a torchrun job (rank 0 growing 130 MiB/s, rank 1 flat and also holding a second
//! context on GPU 0) gives `jobs` in JSON (valid against the schema, the figures exact) and a
//! jobs section in the text form, ranks side by side within 80 columns.

#[path = "common/jobs.rs"]
mod jobs;

use std::process::Command;

use gpumon::source::Framework;
use gpumon::source::scripted::build::{GIB, MIB, process};
use jobs::{JOB, RANK0, Rank};
use serde_json::{Value, json};

/// Rank 1 of the same job on GPU 1 of the same host.
const RANK1_HERE: Rank = Rank {
    pid: 1447,
    gpu: 1,
    rank: 1,
    gib: 9,
    mib_per_s: 0,
};

/// The recording, with rank 1's second context on GPU 0 (774 MiB) in every sample.
fn recording(dir: &std::path::Path) -> std::path::PathBuf {
    let mut samples = jobs::samples(&[RANK0, RANK1_HERE], 2, 15);
    for s in &mut samples {
        let mut extra = process(
            1447,
            &s.gpus[0],
            774 * MIB,
            Framework::Pytorch,
            "python3 train.py --ddp",
        );
        extra.rank = s.processes[1].rank.clone();
        s.processes.push(extra);
    }
    jobs::write(dir, "gpu-a", &samples)
}

fn snapshot(file: &std::path::Path, format: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_gpumon"))
        .args(["snapshot", "--format", format, "--replay"])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_replayed_recording_with_ranks_gives_its_job_in_json_valid_against_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    let doc: Value = serde_json::from_str(&snapshot(&recording(dir.path()), "json")).unwrap();
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string("assets/snapshot.schema.json").unwrap())
            .unwrap();
    jsonschema::draft202012::meta::validate(&schema).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");

    let gpu = |i: u32| format!("GPU-{i:08x}-0000-0000-0000-000000000000");
    let rank0 = 9 * GIB + 14 * 130 * MIB;
    let want = json!([{
        "id": JOB,
        "launcher": "torchrun",
        "world_size": 2,
        "ranks": [
            {
                "pid": 1446, "started_at": "2025-11-22T08:50:46Z", "rank": 0, "local_rank": 0,
                "node": 0, "gpu_uuid": gpu(0), "device_memory": rank0, "elsewhere": [],
                "pool_allocated": null, "pool_reserved": null,
                "growth_bytes_per_s": 130 * MIB, "nccl": null, "exited_at": null
            },
            {
                "pid": 1447, "started_at": "2025-11-22T08:50:47Z", "rank": 1, "local_rank": 1,
                "node": 0, "gpu_uuid": gpu(1), "device_memory": 9 * GIB + 774 * MIB,
                "elsewhere": [{ "gpu_uuid": gpu(0), "device_memory": 774 * MIB }],
                "pool_allocated": null, "pool_reserved": null,
                "growth_bytes_per_s": 0, "nccl": null, "exited_at": null
            }
        ],
        "gpus": [gpu(0), gpu(1)],
        "device_total": rank0 + 9 * GIB + 774 * MIB,
        "problems": [],
        "imbalance": {
            "pid": 1446, "rank": 0, "largest": rank0, "median": 9 * GIB + 774 * MIB,
            "ratio": 1.105, "grows_alone": true
        }
    }]);
    assert_eq!(doc["jobs"], want);
    // Each rank's process carries its place in the job too.
    let ranks: Vec<(u64, u64)> = doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["pid"].as_u64().unwrap(),
                p["rank"]["rank"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(ranks.len(), 3, "{ranks:?}");
    assert!(ranks.iter().all(|(pid, r)| *r == u64::from(*pid == 1447)));
}

#[test]
fn the_text_form_prints_the_job_with_its_ranks_side_by_side_in_80_columns() {
    let dir = tempfile::tempdir().unwrap();
    let text = snapshot(&recording(dir.path()), "text");
    for line in text.lines() {
        assert!(
            line.chars().count() <= 80,
            "{} columns: {line}",
            line.chars().count()
        );
    }
    let start = text.find("Jobs (").expect("a jobs section");
    let section: String = text[start..]
        .lines()
        .take_while(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!("snapshot_jobs_text", section);
}

#[test]
fn a_recording_without_ranks_has_no_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let mut samples = jobs::samples(&[RANK0], 2, 3);
    for s in &mut samples {
        s.processes[0].rank = None;
    }
    let file = jobs::write(dir.path(), "gpu-a", &samples);
    let doc: Value = serde_json::from_str(&snapshot(&file, "json")).unwrap();
    assert!(doc.get("jobs").is_none(), "{}", doc["jobs"]);
    assert!(!snapshot(&file, "text").contains("Jobs ("));
}

/// An alert about a job carries its id in the document (valid against the schema), in the text
/// form's alert head, and back into the machine a remote host's snapshot becomes.
#[test]
fn an_alert_about_a_job_names_it() {
    use gpumon::model::{Alert, Config, Event, Level, Machine};
    use gpumon::snapshot::Snapshot;
    let mut m = Machine::new(Config::new(1000, 600_000));
    gpumon::pipeline::apply(
        &mut m,
        Event::Started(gpumon::source::scripted::build::machine()),
    );
    for s in jobs::samples(&[RANK0, RANK1_HERE], 2, 3) {
        gpumon::pipeline::apply(&mut m, Event::Sample(s));
    }
    m.add_alerts(vec![Alert {
        at_ms: jobs::T0 + 2000,
        gpu_uuid: None,
        pid: Some(RANK0.pid),
        level: Level::Failure,
        class: "device-full".into(),
        confidence: Some("certain".into()),
        title: "rank 0 ran out of device memory".into(),
        evidence: Vec::new(),
        remedy: None,
        job: Some(JOB.into()),
    }]);
    let snapshot = Snapshot::of_machine(&m, m.now_ms);
    let doc: Value = serde_json::from_slice(&snapshot.to_json()).unwrap();
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string("assets/snapshot.schema.json").unwrap())
            .unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(doc["alerts"][0]["job"], JOB);
    let text = gpumon::snapshot::text::render(&snapshot);
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains(&format!("failure device-full (certain) pid 1446 job {JOB}")),
        "{text}"
    );
    let back = snapshot.to_machine(&m.config);
    assert_eq!(back.alerts.first().unwrap().job.as_deref(), Some(JOB));
    assert_eq!(back.jobs, m.jobs);
}
