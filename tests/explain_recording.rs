//! `gpumon explain` on recordings: the real demo (an H100's PyTorch fragmentation OOM with the
//! block map its probe took at the failure, a leak named by its line of code from two maps)
//! replayed, its alerts reported in text and JSON; logs read as before; bad recordings one line
//! and status 1.

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

/// The demo's alerts as `explain --format json` reports them.
fn demo_alerts() -> Vec<serde_json::Value> {
    let (code, out, err) = run(&["explain", DEMO, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["recordings"][0]["alerts"].as_array().unwrap().clone()
}

/// The process the demo's first alert of `class` names.
fn pid_of(alerts: &[serde_json::Value], class: &str) -> u64 {
    let alert = alerts.iter().find(|a| a["class"] == class);
    let pid = alert.and_then(|a| a["pid"].as_u64());
    pid.unwrap_or_else(|| panic!("no {class} alert: {alerts:?}"))
}

/// The samples in the demo: its lines but the header.
fn demo_samples() -> usize {
    std::fs::read_to_string(DEMO).unwrap().lines().count() - 1
}

/// The fragmentation OOM with the block map its probe took at the failure (the holes, the line
/// of the job's code holding the blocks); the growing job's leak warned of, then named by the
/// line whose bytes climb between its maps.
#[test]
fn the_demo_s_oom_with_its_map_and_leak_with_its_site_in_text() {
    let alerts = demo_alerts();
    let (frag, grow) = (pid_of(&alerts, "fragmentation"), pid_of(&alerts, "leak"));
    let (code, out, err) = run(&["explain", DEMO]);
    assert_eq!(code, 0, "{err}");
    for line in out.lines() {
        assert!(line.chars().count() <= 80, "over 80 columns: {line:?}");
    }
    let text = flat(&out);
    let head = format!(
        "assets/demo.ndjson: gpumon recording, {} sample(s)",
        demo_samples()
    );
    assert!(text.starts_with(&head), "{out}");
    let oom = text
        .find(&format!(
            "2026-11-26T09:47:04.266Z GPU 0 pid {frag}: fragmentation (failure, certain)"
        ))
        .expect(&out);
    for figure in [
        "at the failure: 4.93 GiB free in 917 holes, largest 14.00 MiB; held by \
         gpu/torch_frag.py:48 <module> (4.03 GiB, 688 blocks)",
        "command: python3 /home/demo/gpu/torch_frag.py fill",
        "asked 512.00 MiB",
        "4.93 GiB reserved by PyTorch but unallocated",
        "remedy: Set PYTORCH_ALLOC_CONF=expandable_segments:True",
    ] {
        assert!(text[oom..].contains(figure), "{figure}: {out}");
    }
    let leak = text
        .find(&format!("GPU 0 pid {grow}: leak (suspected)"))
        .expect(&out);
    let site = text
        .find(&format!("GPU 0 pid {grow}: leak-site (suspected)"))
        .expect(&out);
    assert!(leak < site && site < oom, "in time order: {out}");
    assert!(
        text[site..].contains(&format!(
            "pid {grow} torch leak: gpu/torch_frag.py:76 <module> climbs between its maps"
        )),
        "{out}"
    );
    assert!(!text.contains("no allocation failures found"), "{out}");
    assert!(text.ends_with("alert(s) in 1 recording(s)"), "{out}");
}

/// Each process the alerts name gets a timeline of allocated, pool and device memory around
/// its alerts: the fragmenting job's OOM (`X`) under a pool twice its allocations, the growing
/// job's warnings (`!`) as it climbs.
#[test]
fn the_demo_s_processes_get_a_timeline_around_their_alerts() {
    let alerts = demo_alerts();
    let (code, out, err) = run(&["explain", DEMO]);
    assert_eq!(code, 0, "{err}");
    let block = |pid: u64| -> Vec<&str> {
        let start = out.find(&format!("  pid {pid} from ")).expect(&out);
        out[start..].lines().take(5).collect()
    };
    let frag = block(pid_of(&alerts, "fragmentation"));
    assert!(
        frag[0].contains("1s a column, bars from 0 to 9.5G"),
        "{out}"
    );
    for (line, name) in frag[1..4].iter().zip(["allocated", "pool", "device"]) {
        assert!(line.trim_start().starts_with(name), "{name}: {frag:?}");
    }
    assert!(
        frag[1].contains("4.0G") && frag[2].contains("9.0G"),
        "{frag:?}"
    );
    // The marks, without the key after them ("! alert  X OOM").
    let marks = |line: &str| line.split("   ! alert").next().unwrap().to_string();
    assert_eq!(marks(frag[4]).matches('X').count(), 1, "its OOM: {frag:?}");
    let grow = block(pid_of(&alerts, "leak"));
    let leak_marks = marks(grow[4]);
    assert_eq!(
        leak_marks.matches('!').count(),
        3,
        "leak, leak-site, growth-step: {grow:?}"
    );
    assert!(!leak_marks.contains('X'), "{grow:?}");
    for class in ["preallocation", "releasable-cache", "device-full"] {
        let pid = pid_of(&alerts, class);
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
    assert_eq!(rec["samples"], demo_samples());
    let alerts = rec["alerts"].as_array().unwrap();
    let find = |class: &str| {
        let pid = pid_of(alerts, class);
        let alert = alerts.iter().find(|a| a["class"] == class).unwrap();
        (pid, alert)
    };
    let (grow, site) = find("leak-site");
    assert_eq!(site["level"], "suspected");
    assert_eq!(site["gpu"], 0);
    assert!(
        site["command"]
            .as_str()
            .unwrap()
            .contains("torch_frag.py grow")
    );
    assert_eq!(pid_of(alerts, "leak"), grow, "one job's leak and its site");
    assert!(
        site["evidence"][0]
            .as_str()
            .unwrap()
            .starts_with("the site whose bytes climb between maps: gpu/torch_frag.py:76 <module>"),
        "{site}"
    );
    let (_, oom) = find("fragmentation");
    assert_eq!(oom["level"], "failure");
    assert_eq!(oom["confidence"], "certain");
    assert_eq!(oom["time"], "2026-11-26T09:47:04.266Z");
    assert!(
        oom["command"]
            .as_str()
            .unwrap()
            .contains("torch_frag.py fill")
    );
    let evidence = oom["evidence"].as_array().unwrap();
    assert!(
        evidence[0]
            .as_str()
            .unwrap()
            .starts_with("at the failure: 4.93 GiB free in 917 holes, largest 14.00 MiB"),
        "{oom}"
    );
    assert!(evidence.contains(&"asked 512.00 MiB".into()));
    assert!(
        oom["remedy"]
            .as_str()
            .unwrap()
            .contains("expandable_segments:True")
    );
    assert!(site["at_ms"].as_u64() < oom["at_ms"].as_u64());
}

#[test]
fn logs_read_as_before_and_come_first() {
    let (code, alone, err) = run(&["explain", LOG]);
    assert_eq!(code, 0, "{err}");
    assert!(alone.contains("fragmentation (likely)"), "{alone}");
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
