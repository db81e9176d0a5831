//! `gpumon explain` on recordings: the real demo (an H100's PyTorch fragmentation OOM, warned
//! of first by the allocator probe's figures) replayed, its alerts reported in text and JSON;
//! logs read as before; bad recordings one line and status 1.

use assert_cmd::Command;

const DEMO: &str = "assets/demo.ndjson";
const LOG: &str = "tests/fixtures/logs/torch-fill-frag.log";

fn gpumon() -> Command {
    let mut c = Command::cargo_bin("gpumon").unwrap();
    c.env("GPUMON_NVML_LIB", "/nonexistent/libnvidia-ml.so.1");
    c
}

/// Runs and returns (status, stdout, stderr).
fn run(args: &[&str]) -> (i32, String, String) {
    let out = gpumon().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The text with its wrapping undone (one space between words).
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn the_demo_s_fragmentation_warning_and_oom_in_text() {
    let (code, out, err) = run(&["explain", DEMO]);
    assert_eq!(code, 0, "{err}");
    for line in out.lines() {
        assert!(line.chars().count() <= 80, "over 80 columns: {line:?}");
    }
    let text = flat(&out);
    assert!(text.starts_with("assets/demo.ndjson: gpumon recording, 110 sample(s)"));
    let warning = text
        .find("GPU 0 pid 1377: fragmentation-risk (suspected)")
        .expect(&out);
    let oom = text
        .find("GPU 0 pid 1377: fragmentation (failure, certain)")
        .expect(&out);
    assert!(warning < oom, "the warning came first: {out}");
    for figure in [
        "4.93 GiB free in the pool, but its largest free block is 14.00 MiB",
        "stranded in split blocks: 4.93 GiB",
        "command: python3 /work/main/scripts/gpu/torch_frag.py fill",
        "asked 512.00 MiB",
        "4.93 GiB reserved by PyTorch but unallocated",
        "remedy: Set PYTORCH_ALLOC_CONF=expandable_segments:True",
        "2026-11-23T06:22:38.541Z",
    ] {
        assert!(text.contains(figure), "{figure}: {out}");
    }
    assert!(!text.contains("no allocation failures found"), "{out}");
    assert!(text.ends_with("alert(s) in 1 recording(s)"), "{out}");
}

/// Each process the alerts name gets a timeline of allocated, pool and device memory around
/// its alerts: pid 1377's risk (`!`) comes before its OOM (`X`), under a pool twice its
/// allocations.
#[test]
fn the_demo_s_processes_get_a_timeline_around_their_alerts() {
    let (code, out, err) = run(&["explain", DEMO]);
    assert_eq!(code, 0, "{err}");
    let start = out.find("  pid 1377 from ").expect(&out);
    let block: Vec<&str> = out[start..].lines().take(5).collect();
    assert!(
        block[0].contains("1s a column, bars from 0 to 9.5G"),
        "{out}"
    );
    for (line, name) in block[1..4].iter().zip(["allocated", "pool", "device"]) {
        assert!(line.trim_start().starts_with(name), "{name}: {block:?}");
    }
    assert!(
        block[1].contains("4.0G") && block[2].contains("9.0G"),
        "{block:?}"
    );
    let marks = block[4];
    let (risk, oom) = (marks.find('!').unwrap(), marks.find('X').unwrap());
    assert!(risk < oom, "the risk before the OOM: {marks}");
    for pid in [1183, 1320, 1341, 1409] {
        assert!(out.contains(&format!("  pid {pid} from ")), "{pid}: {out}");
    }
}

#[test]
fn the_demo_s_alerts_in_json_beside_the_unchanged_fields() {
    let (code, out, err) = run(&["explain", DEMO, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["schema"], "gpumon.explain/1");
    assert_eq!(v["logs"], serde_json::json!([]));
    assert_eq!(v["failures"], serde_json::json!([]));
    let rec = &v["recordings"][0];
    assert_eq!(rec["file"], DEMO);
    assert_eq!(rec["samples"], 110);
    let alerts = rec["alerts"].as_array().unwrap();
    let find = |class: &str| {
        alerts
            .iter()
            .find(|a| a["class"] == class && a["pid"] == 1377)
            .unwrap_or_else(|| panic!("no {class} alert for pid 1377: {out}"))
    };
    let risk = find("fragmentation-risk");
    assert_eq!(risk["level"], "suspected");
    assert_eq!(risk["gpu"], 0);
    assert!(
        risk["command"]
            .as_str()
            .unwrap()
            .contains("torch_frag.py fill")
    );
    assert!(
        risk["title"]
            .as_str()
            .unwrap()
            .contains("4.93 GiB free in the pool, but its largest free block is 14.00 MiB"),
        "{risk}"
    );
    let oom = find("fragmentation");
    assert_eq!(oom["level"], "failure");
    assert_eq!(oom["confidence"], "certain");
    assert_eq!(oom["time"], "2026-11-23T06:22:38.541Z");
    assert!(
        oom["evidence"]
            .as_array()
            .unwrap()
            .contains(&"asked 512.00 MiB".into())
    );
    assert!(
        oom["remedy"]
            .as_str()
            .unwrap()
            .contains("expandable_segments:True")
    );
    assert!(risk["at_ms"].as_u64() < oom["at_ms"].as_u64());
}

#[test]
fn logs_read_as_before_and_come_first() {
    let (code, alone, err) = run(&["explain", LOG]);
    assert_eq!(code, 0, "{err}");
    assert!(alone.contains("fragmentation (certain)"), "{alone}");
    let (code, both, err) = run(&["explain", DEMO, LOG]);
    assert_eq!(code, 0, "{err}");
    let rest = both.strip_prefix(&alone).expect(&both);
    assert!(
        rest.starts_with("\nassets/demo.ndjson: gpumon recording"),
        "{both}"
    );
    // Without a recording the JSON has no new field.
    let (_, json, _) = run(&["explain", LOG, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(v.get("recordings").is_none(), "{json}");
    assert_eq!(v["failures"].as_array().unwrap().len(), 1);
}

#[test]
fn bad_recordings_are_one_line_and_status_1() {
    let dir = tempfile::tempdir().unwrap();
    let header = std::fs::read_to_string(DEMO)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    let cases: [(&str, Vec<u8>, &str); 4] = [
        (
            "bad-line.ndjson",
            format!("{header}\n{{\"at_ms\": oops}}\n").into_bytes(),
            "line 2",
        ),
        (
            "no-samples.ndjson",
            format!("{header}\n").into_bytes(),
            "without samples",
        ),
        (
            "future.ndjson",
            b"{\"schema\":\"gpumon.recording/99\"}\n".to_vec(),
            "not supported",
        ),
        (
            "garbage.ndjson.zst",
            b"\x28\xb5\x2f\xfdnot zstd at all\n".to_vec(),
            "not a valid zstd stream",
        ),
    ];
    // The log given with each bad recording is still reported; the bad one is named on stderr,
    // and the status is 1.
    let (_, alone, _) = run(&["explain", LOG]);
    for (name, bytes, says) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let (code, out, err) = run(&["explain", LOG, path.to_str().unwrap()]);
        assert_eq!(code, 1, "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(err.contains(name) && err.contains(says), "{name}: {err}");
        assert_eq!(out, alone, "{name}: the log is reported as alone");
    }
    let (code, _, err) = run(&["explain", DEMO, "/nonexistent/rec.ndjson"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("cannot read /nonexistent/rec.ndjson"), "{err}");
}
