//! The job-end stories of issue 39 captured on 2 H200s (`tests/fixtures/dist/h200-*`, README.md
//! there; `scripts/gpu/stories/capture.sh`), replayed by the real binary's `gpumon explain
//! --format json`: a rank whose data loader blocked named live before its peer's watchdog fired
//! and then as never reaching the collective; every rank leaking alike told as one cause; a
//! torchrun job killed from outside told as such with no rank blamed; a JAX job that ran on
//! after its allocation failures told as survived, its normal ends no consequences; a job that
//! spawn ended told without "no fix of their own"; and a healthy job ending near its cap silent.

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

fn evidence(a: &Value) -> Vec<&str> {
    a["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect()
}

fn of<'a>(alerts: &'a [Value], class: &str) -> Vec<&'a Value> {
    alerts.iter().filter(|a| a["class"] == class).collect()
}

#[test]
fn the_rank_whose_loader_blocked_is_named_before_the_watchdog_and_then_stuck() {
    let alerts = alerts("h200-stuck");
    assert_eq!(alerts.len(), 2, "{alerts:#?}");
    let (live, end) = (&of(&alerts, "rank-stalled"), &of(&alerts, "rank-stuck"));
    assert_eq!((live.len(), end.len()), (1, 1), "{alerts:#?}");
    let (live, end) = (live[0], end[0]);
    assert!(
        title(live).starts_with("rank 1 (pid 855) has not reached the collective its job's other ranks wait in: its main thread has been at stories/torch_job.py:")
            && title(live).contains("next_batch"),
        "{live:#?}"
    );
    // Named 26 s before rank 0's watchdog fired (45 s after the loader blocked).
    let lead = end["at_ms"].as_u64().unwrap() - live["at_ms"].as_u64().unwrap();
    assert!(lead >= 20_000, "named {lead} ms before: {alerts:#?}");
    assert!(
        title(end).starts_with("rank 1 never reached ALLREDUCE #281: rank 0 waited for it"),
        "{end:#?}"
    );
    let ev = evidence(end);
    assert!(
        ev.iter()
            .any(|e| e.contains("last enqueued NCCL work #280")),
        "{end:#?}"
    );
    assert!(
        ev.iter()
            .any(|e| e.contains("rank 0 aborted by NCCL's watchdog")
                && e.contains("a consequence of rank 1")),
        "{end:#?}"
    );
}

#[test]
fn every_rank_leaking_alike_is_one_common_cause() {
    let alerts = alerts("h200-alike");
    assert_eq!(alerts.len(), 1, "{alerts:#?}");
    let a = &alerts[0];
    assert!(
        title(a).starts_with("ranks 0 and 1 each ran out of memory of their own within 1s: one cause in code every rank runs"),
        "{a:#?}"
    );
    let remedy = a["remedy"].as_str().unwrap();
    assert!(
        remedy.contains("serves all 2 ranks") && !remedy.contains("no fix of their own"),
        "{remedy}"
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
fn a_jax_job_that_ran_on_after_its_allocation_failures_survived_them() {
    let alerts = alerts("h200-survived");
    let s = of(&alerts, "survived");
    assert_eq!(s.len(), 1, "{alerts:#?}");
    assert!(
        title(s[0]).starts_with("rank 1 ran out of memory at "),
        "{:#?}",
        s[0]
    );
    assert!(
        title(s[0]).contains("and ran on: its results after it may be errors that were never read")
    );
    assert!(
        s[0]["remedy"]
            .as_str()
            .unwrap()
            .contains("jax.block_until_ready")
    );
    let ev = evidence(s[0]);
    assert!(
        ev.iter().any(|e| e.contains("6 times in all")),
        "{:#?}",
        s[0]
    );
    assert!(
        ev.iter()
            .any(|e| e.starts_with("rank 0 exited through the interpreter")
                && e.contains("not called a consequence")),
        "{:#?}",
        s[0]
    );
    // No failure: nothing ended the job; no PyTorch words for a JAX array.
    assert!(
        alerts.iter().all(|a| a["level"] != "failure"),
        "{alerts:#?}"
    );
    assert!(
        alerts
            .iter()
            .all(|a| !a["remedy"].as_str().unwrap_or("").contains(".detach()")),
        "{alerts:#?}"
    );
}

#[test]
fn ranks_spawn_ended_are_not_told_they_need_no_fix() {
    let alerts = alerts("h200-common");
    assert_eq!(alerts.len(), 1, "{alerts:#?}");
    let a = &alerts[0];
    assert!(
        title(a).starts_with("a rank failed first, 1 rank followed"),
        "{a:#?}"
    );
    assert!(
        !a["remedy"]
            .as_str()
            .unwrap()
            .contains("no fix of their own"),
        "{a:#?}"
    );
    assert!(
        evidence(a)
            .iter()
            .filter(|e| e.contains("exited through the interpreter")
                && e.contains(", after a rank's OOM"))
            .count()
            == 2,
        "{a:#?}"
    );
}

#[test]
fn a_healthy_job_that_ends_near_its_cap_is_silent() {
    assert!(alerts("h200-nearcap").is_empty());
}
