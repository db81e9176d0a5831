//! The real distributed runs of `tests/fixtures/dist/h100-*` (2 H100s, README.md there) replayed
//! by the real binary's `gpumon explain --format json`: the rank that grows alone warned for its
//! job at least 20 s before its OOM, the job's failure one alert naming the root-cause rank with
//! the other rank's end a consequence, `torch.load` without `map_location` named, and a healthy
//! FSDP job silent; and a rank's OOM printed without a prefix into torchrun's output (the corpus
//! run `tests/fixtures/workloads/ddp-rank0-leak`) joined to that rank by its probe.

#[path = "common/replay.rs"]
mod replay;

use replay::replay_alerts;
use serde_json::Value;

/// The alerts `explain` raised replaying the set's recording, oldest first.
fn alerts(set: &str) -> Vec<Value> {
    replay_alerts(format!("tests/fixtures/dist/{set}/recording.ndjson.zst"))
}

fn of<'a>(alerts: &'a [Value], level: &str) -> Vec<&'a Value> {
    alerts.iter().filter(|a| a["level"] == level).collect()
}

fn title(a: &Value) -> &str {
    a["title"].as_str().unwrap()
}

fn says(a: &Value, words: &str) -> bool {
    a["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e.as_str().unwrap().contains(words))
}

/// One warning (rank 0 growing alone, for its job) at least 20 s before one failure (rank 0's
/// OOM, a leak, with rank 1's end a consequence).
fn rank_0_grows_alone_then_fails(set: &str, pid: u64, rank_1_ended: &str) {
    let alerts = alerts(set);
    let (warnings, failures) = (of(&alerts, "suspected"), of(&alerts, "failure"));
    assert_eq!(warnings.len(), 1, "{alerts:#?}");
    assert_eq!(failures.len(), 1, "{alerts:#?}");
    let (w, f) = (warnings[0], failures[0]);
    assert_eq!(
        (w["class"].as_str(), w["pid"].as_u64()),
        (Some("rank-grows-alone"), Some(pid))
    );
    assert!(
        title(w).contains(&format!("rank 0 (pid {pid}) grows +"))
            && title(w).contains("while rank 1 is flat: work only rank 0 does"),
        "{w:#?}"
    );
    // The job's own figures: rank 0 kept 214 MiB a second (README.md); said within a quarter.
    let rate: f64 = title(w)
        .split_once("grows +")
        .and_then(|(_, r)| r.split_once("M/s"))
        .map(|(r, _)| r.parse().unwrap())
        .unwrap();
    assert!((160.0..=270.0).contains(&rate), "{rate} MiB/s: {w:#?}");
    let lead = f["at_ms"].as_u64().unwrap() - w["at_ms"].as_u64().unwrap();
    assert!(lead >= 20_000, "warned {lead} ms before the OOM: {w:#?}");
    assert_eq!(
        (f["class"].as_str(), f["pid"].as_u64()),
        (Some("leak"), Some(pid))
    );
    assert!(
        title(f).starts_with(&format!(
            "rank 0 failed first, 1 rank followed: pid {pid} PyTorch OOM: leak"
        )),
        "{f:#?}"
    );
    assert!(says(f, rank_1_ended), "{f:#?}");
}

#[test]
fn torchrun_rank_0_leaking_is_warned_for_its_job_and_its_oom_stops_rank_1() {
    rank_0_grows_alone_then_fails(
        "h100-torchrun-leak",
        658,
        "rank 1 stopped by torchrun with SIGTERM",
    );
}

#[test]
fn rank_by_rank_rank_0_leaking_is_warned_and_rank_1_aborted_by_the_watchdog_follows() {
    rank_0_grows_alone_then_fails(
        "h100-rank-by-rank",
        806,
        "rank 1 aborted by NCCL's watchdog at 09:36:56 waiting on ALLREDUCE #3655",
    );
}

#[test]
fn torch_load_without_map_location_names_rank_1_on_gpu0_and_nothing_else() {
    let alerts = alerts("h100-load");
    assert_eq!(alerts.len(), 1, "{alerts:#?}");
    let a = &alerts[0];
    assert_eq!(a["class"], "rank-extra-context");
    // nvidia-smi.txt beside the recording: 1237, GPU0 (…-599f190516c0), 774 MiB.
    assert!(
        title(a).starts_with("rank 1 (pid 1237) also holds 774.00 MiB on GPU0, rank 0's GPU"),
        "{a:#?}"
    );
    let smi = std::fs::read_to_string("tests/fixtures/dist/h100-load/nvidia-smi.txt").unwrap();
    assert!(
        smi.contains("1237, GPU-69ae4eb9-a236-1f18-88cf-599f190516c0, 774 MiB"),
        "{smi}"
    );
}

#[test]
fn a_healthy_fsdp_job_raises_nothing() {
    let alerts = alerts("h100-fsdp");
    assert!(alerts.is_empty(), "{alerts:#?}");
}

#[test]
fn a_jax_process_that_runs_out_names_it_first_and_the_other_as_its_consequence() {
    let alerts = alerts("h100-jax");
    let failures = of(&alerts, "failure");
    assert_eq!(failures.len(), 1, "{alerts:#?}");
    let f = failures[0];
    assert_eq!(
        (f["class"].as_str(), f["pid"].as_u64()),
        (Some("pool-limit"), Some(604))
    );
    assert!(
        title(f).starts_with("rank 1 failed first, 1 rank followed: pid 604 JAX OOM: pool-limit"),
        "{f:#?}"
    );
    // Process 0's own end, read from its log: JAX's service terminated it.
    assert!(
        says(
            f,
            "rank 0 terminated by JAX's distributed service at 11:03:29 (another task died): a consequence of rank 1's OOM at 11:03:22"
        ),
        "{f:#?}"
    );
    // Its OOM line was read a second after it exited: no suspicion of an exit at the limit.
    assert!(
        alerts.iter().all(|a| a["class"] != "exit-at-limit"),
        "{alerts:#?}"
    );
    // Warned first for its job: process 1 alone grows (process 0 only all-gathers 16 bytes).
    let first = of(&alerts, "suspected")[0];
    assert_eq!(first["class"], "rank-grows-alone");
    assert!(f["at_ms"].as_u64() > first["at_ms"].as_u64());
}

#[test]
fn a_ranks_printed_oom_in_torchruns_output_is_that_ranks_by_its_probe() {
    // The corpus run ddp-rank0-leak (2 H100s): rank 0 printed its OOM with no prefix.
    let alerts = replay_alerts("tests/fixtures/workloads/ddp-rank0-leak/recording.ndjson.zst");
    let failures = of(&alerts, "failure");
    assert_eq!(failures.len(), 1, "{alerts:#?}");
    let f = failures[0];
    assert_eq!(
        (f["class"].as_str(), f["pid"].as_u64()),
        (Some("leak"), Some(640))
    );
    assert!(
        title(f).starts_with("rank 0 failed first, 1 rank followed: pid 640 PyTorch OOM: leak"),
        "{f:#?}"
    );
    assert!(says(f, "rank 1 stopped by torchrun with SIGTERM"), "{f:#?}");
    assert!(says(f, "rank 0 is torchrun's root cause"), "{f:#?}");
    let first = of(&alerts, "suspected")[0];
    assert_eq!(first["class"], "rank-grows-alone");
    let ahead = f["at_ms"].as_u64().unwrap() - first["at_ms"].as_u64().unwrap();
    assert!(ahead >= 20_000, "warned {ahead} ms ahead");
}
