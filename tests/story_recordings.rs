//! The job-end stories of issue 39 captured on 2 H200s (`tests/fixtures/dist/h200-*`, README.md
//! there; `scripts/gpu/stories/capture.sh`), replayed by the real binary's `gpumon explain
//! --format json`: a rank whose data loader blocked named as never reaching the collective the
//! other rank timed out on, a torchrun job killed from outside told as such with no rank blamed,
//! and a healthy job ending near its cap silent.

#[path = "common/replay.rs"]
mod replay;

use replay::replay_alerts;
use serde_json::Value;

fn alerts(set: &str) -> Vec<Value> {
    replay_alerts(format!("tests/fixtures/dist/{set}/recording.ndjson.gz"))
}

fn title(a: &Value) -> &str {
    a["title"].as_str().unwrap()
}

#[test]
fn the_rank_whose_loader_blocked_is_named_stuck_and_the_abort_its_consequence() {
    let alerts = alerts("h200-stuck");
    assert_eq!(alerts.len(), 1, "{alerts:#?}");
    let a = &alerts[0];
    assert_eq!(a["class"], "rank-stuck");
    assert!(
        title(a).starts_with("rank 1 never reached ALLREDUCE #281: rank 0 waited for it"),
        "{a:#?}"
    );
    let evidence: Vec<&str> = a["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert!(
        evidence
            .iter()
            .any(|e| e.contains("last enqueued NCCL work #280")),
        "{a:#?}"
    );
    assert!(
        evidence
            .iter()
            .any(|e| e.contains("rank 0 aborted by NCCL's watchdog")
                && e.contains("a consequence of rank 1")),
        "{a:#?}"
    );
}

#[test]
fn a_torchrun_job_killed_from_outside_blames_no_rank() {
    let alerts = alerts("h200-outside");
    assert_eq!(alerts.len(), 1, "{alerts:#?}");
    let a = &alerts[0];
    assert_eq!(
        (a["class"].as_str(), a["level"].as_str()),
        (Some("stopped-from-outside"), Some("info"))
    );
    assert!(
        title(a).contains("torchrun itself received SIGTERM"),
        "{a:#?}"
    );
    assert!(title(a).ends_with("no rank failed"), "{a:#?}");
}

#[test]
fn a_healthy_job_that_ends_near_its_cap_is_silent() {
    assert!(alerts("h200-nearcap").is_empty());
}
