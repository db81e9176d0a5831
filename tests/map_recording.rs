//! Maps in recordings: the real demo recording (made before maps, so old recordings still
//! replay) with its failing process's OOM map added to the sample of the failure, as a probe
//! would have written it: `explain` shows the map at the failure, and `snapshot --replay` carries
//! the map in JSON (valid against the schema's `maps`) and text.

use assert_cmd::Command;
use gpumon::sample::pool_map::{MapOom, MapReason};
use gpumon::source::scripted::maps::fragmented;

const PID: u32 = 1377;
const GPU: &str = "GPU-9601073a-4930-3745-eb95-7957db7c2774";

fn gpumon() -> Command {
    let mut c = Command::cargo_bin("gpumon").unwrap();
    c.env("GPUMON_NVML_LIB", "/nonexistent/libnvidia-ml.so.1");
    c
}

/// The demo with an OOM map in the sample whose log shows pid 1377's failure.
fn recording(dir: &std::path::Path) -> std::path::PathBuf {
    let text = std::fs::read_to_string("assets/demo.ndjson").unwrap();
    let mut out = String::new();
    let mut added = false;
    for (i, line) in text.lines().enumerate() {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        let failing = i > 0
            && v["failures"]
                .as_array()
                .is_some_and(|f| f.iter().any(|f| f["pid"] == PID));
        if failing && !added {
            let start = v["processes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["pid"] == PID)
                .unwrap()["start_time"]
                .as_u64()
                .unwrap();
            let at = v["at_ms"].as_u64().unwrap();
            let mut map = fragmented(PID, GPU, at - 200, 312);
            map.start_time = start;
            map.reason = MapReason::Oom;
            map.oom = Some(MapOom {
                device: 0,
                request: 512 << 20,
                device_allocated: None,
                device_free: None,
            });
            v["probes"] = serde_json::json!([{ "pid": PID, "start_time": start, "map": map }]);
            added = true;
        }
        out.push_str(&v.to_string());
        out.push('\n');
    }
    assert!(added);
    let path = dir.join("demo-with-map.ndjson");
    std::fs::write(&path, out).unwrap();
    path
}

#[test]
fn explain_and_snapshots_show_the_map_at_the_failure() {
    let dir = tempfile::tempdir().unwrap();
    let path = recording(dir.path());
    let path = path.to_str().unwrap();
    let out = gpumon().args(["explain", path]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        text.contains("at the failure: 624.00 MiB free in 312 holes, largest 2.00 MiB; held by proj/train.py:87 collate"),
        "{text}"
    );

    let out = gpumon()
        .args(["snapshot", "--replay", path])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let maps = doc["maps"].as_array().expect("maps in the snapshot");
    assert_eq!(maps[0]["pid"], PID);
    assert_eq!(maps[0]["map"]["reason"], "oom");
    assert!(
        maps[0]["fits"][0]["fit"]
            .as_str()
            .unwrap()
            .starts_with("a 512.00 MiB request does not fit")
    );
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("assets/snapshot.schema.json").unwrap())
            .unwrap();
    jsonschema::draft202012::meta::validate(&schema).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let errors = validator.iter_errors(&doc).into_errors();
    assert!(errors.is_empty(), "{errors}");

    let out = gpumon()
        .args(["snapshot", "--replay", path, "--format", "text"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Block maps (from the allocator probes):"),
        "{text}"
    );
    assert!(text.contains("proj/train.py:87 collate"), "{text}");
    for line in text.lines() {
        assert!(line.chars().count() <= 80, "{line:?}");
    }
}

/// A real H100 recording (`scripts/gpu/map_check.sh`, `gpumon record` at 500 ms) of
/// `torch_frag.py holes` run with `--record-allocations`: PyTorch's OOM observer took 6.0 s to
/// write the map of the failure (the first snapshot symbolises the history), so the probe's OOM
/// count was seen 6 s before the job's error reached its log. One OOM is one alert: the log's,
/// classified fragmentation, with the map at the failure.
#[test]
fn an_oom_whose_map_took_seconds_is_one_alert_with_the_map() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/probe-maps/holes-oom-recorded.ndjson.zst"
    );
    let out = gpumon()
        .args(["explain", "--format", "json", path])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let alerts = doc["recordings"][0]["alerts"].as_array().unwrap();
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    let a = &alerts[0];
    assert_eq!(
        (&a["level"], &a["class"], &a["confidence"], &a["pid"]),
        (
            &serde_json::json!("failure"),
            &serde_json::json!("fragmentation"),
            &serde_json::json!("certain"),
            &serde_json::json!(473)
        )
    );
    assert_eq!(
        a["evidence"][0],
        "at the failure: 3.90 GiB free in 333 holes, largest 12.00 MiB; held by \
         gpu/torch_frag.py:58 <module> (2.60 GiB, 333 blocks)"
    );
}
