//! Maps in recordings: the real demo recording holds the block maps its jobs' probes took on the
//! H100 (the fragmenting PyTorch job's at its OOM, with the line of its code that holds the
//! blocks): `explain` shows the map at the failure, and `snapshot --replay` carries the maps in
//! JSON (valid against the schema's `maps`) and text.

use assert_cmd::Command;

const DEMO: &str = "assets/demo.ndjson";

fn gpumon() -> Command {
    let mut c = Command::cargo_bin("gpumon").unwrap();
    c.env("GPUMON_NVML_LIB", "/nonexistent/libnvidia-ml.so.1");
    c
}

/// The fragmenting job: the process the demo's fragmentation OOM names.
fn fragmenting_pid() -> u64 {
    let out = gpumon()
        .args(["explain", DEMO, "--format", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let alerts = doc["recordings"][0]["alerts"].as_array().unwrap().clone();
    let oom = alerts.iter().find(|a| a["class"] == "fragmentation");
    oom.and_then(|a| a["pid"].as_u64())
        .expect("the demo's fragmentation OOM")
}

#[test]
fn explain_and_snapshots_show_the_map_at_the_failure() {
    let pid = fragmenting_pid();
    let out = gpumon().args(["explain", DEMO]).output().unwrap();
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
        text.contains(
            "at the failure: 4.93 GiB free in 917 holes, largest 14.00 MiB; held by \
             gpu/torch_frag.py:48 <module> (4.03 GiB, 688 blocks)"
        ),
        "{text}"
    );

    let out = gpumon()
        .args(["snapshot", "--replay", DEMO])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let maps = doc["maps"].as_array().expect("maps in the snapshot");
    let map = maps
        .iter()
        .find(|m| m["pid"] == pid)
        .unwrap_or_else(|| panic!("pid {pid}'s map: {maps:?}"));
    assert_eq!(map["map"]["reason"], "oom");
    assert!(
        map["fits"][0]["fit"]
            .as_str()
            .unwrap()
            .starts_with("a 512.00 MiB request does not fit: 4.93 GiB is free in 917 holes"),
        "{map}"
    );
    let sites = &map["map"]["frameworks"][0]["devices"][0]["sites"];
    assert_eq!(sites[0]["line"], 48, "{sites}");
    assert!(
        sites[0]["file"]
            .as_str()
            .unwrap()
            .ends_with("gpu/torch_frag.py"),
        "{sites}"
    );
    // The other jobs' maps too: the growing PyTorch job's, JAX's and CuPy's, each a process of
    // the demo.
    assert!(maps.len() >= 4, "{maps:?}");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("assets/snapshot.schema.json").unwrap())
            .unwrap();
    jsonschema::draft202012::meta::validate(&schema).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let errors = validator.iter_errors(&doc).into_errors();
    assert!(errors.is_empty(), "{errors}");

    let out = gpumon()
        .args(["snapshot", "--replay", DEMO, "--format", "text"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Block maps (from the allocator probes):"),
        "{text}"
    );
    for site in [
        "gpu/torch_frag.py:48 <module>: 4.03 GiB in 688 blocks",
        "gpu/torch_frag.py:76 <module>",
        "gpu/jax_oom.py:28 <module>",
    ] {
        assert!(text.contains(site), "{site}: {text}");
    }
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
