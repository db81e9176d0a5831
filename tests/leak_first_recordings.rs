//! Issue 34's jobs recorded on an H100 by `gpumon record` (which asks probes for maps during
//! alerts as `serve` and the screen do), replayed by the real binary's `gpumon explain --format
//! json`: a leak that fragments warned as a leak at least 20 s before its OOM, its line named
//! before the OOM, the OOM a leak with fragmentation second; a JAX job's maps read (their
//! `segments_total` is null: JAX gives no block map) and its keeping line named.

#[path = "common/replay.rs"]
mod replay;

use replay::replay_alerts;
use serde_json::Value;

fn class(a: &Value) -> &str {
    a["class"].as_str().unwrap()
}

fn at(a: &Value) -> u64 {
    a["at_ms"].as_u64().unwrap()
}

/// `scripts/gpu/workloads/keepers.py gpt2-keep-slices` (GPT-2, 16 GiB cap, a helper keeping
/// `logits[:, -8:, :].clone()` every step) under `corpus.py`, allocation history recorded.
#[test]
fn gpt2_keeping_logits_slices_is_a_leak_named_at_its_line_before_its_oom() {
    let alerts = replay_alerts("tests/fixtures/probe-maps/gpt2-keep-slices-recorded.ndjson.zst");
    let classes: Vec<&str> = alerts.iter().map(class).collect();
    assert_eq!(classes, ["leak", "leak-site", "leak"], "{alerts:#?}");
    let (warned, site, oom) = (&alerts[0], &alerts[1], &alerts[2]);
    assert_eq!(warned["level"], "suspected");
    assert!(at(oom) - at(warned) >= 20_000, "{alerts:#?}");
    assert!(
        site["title"]
            .as_str()
            .unwrap()
            .ends_with("workloads/keepers.py:39 remember climbs between its maps"),
        "{site:#?}"
    );
    assert!(
        at(site) < at(oom),
        "the line named before the OOM: {alerts:#?}"
    );
    assert_eq!(
        (oom["level"].as_str(), class(oom)),
        (Some("failure"), "leak")
    );
    let title = oom["title"].as_str().unwrap();
    assert!(
        title.contains("PyTorch OOM: leak, +") && title.contains("then fragmentation"),
        "{title}"
    );
    assert!(
        oom["remedy"]
            .as_str()
            .unwrap()
            .starts_with("Find what keeps memory alive from step to step in pid 441, starting at workloads/keepers.py:39 remember"),
        "{oom:#?}"
    );
}

/// `keepers.py jax-keep-maps` (no preallocation, 15 % of the GPU, each step's activations kept
/// in a list) from the alert corpus: the maps the probe wrote were read, not refused.
#[test]
fn a_jax_job_keeping_arrays_has_its_maps_read_and_its_line_named() {
    let alerts = replay_alerts("tests/fixtures/workloads/jax-keep-maps/recording.ndjson.zst");
    assert!(
        !alerts.iter().any(|a| class(a) == "notice"),
        "no map file refused: {alerts:#?}"
    );
    let site = alerts
        .iter()
        .find(|a| class(a) == "leak-site")
        .expect("a leak-site");
    assert!(
        site["title"]
            .as_str()
            .unwrap()
            .ends_with("workloads/keepers.py:42 keep climbs between its maps"),
        "{site:#?}"
    );
    let oom = alerts.iter().find(|a| a["level"] == "failure").unwrap();
    assert!(at(site) < at(oom));
    assert!(
        oom["title"]
            .as_str()
            .unwrap()
            .contains("JAX OOM: pool-limit after a leak"),
        "{oom:#?}"
    );
}
