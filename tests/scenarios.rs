//! Scenarios from real hardware: the OOM logs captured on an H100 (torch 2.11, jax 0.11.2,
//! cupy 14.2) through `gpumon explain`, and the demo recording replayed sample by sample through
//! `State::update`, checking classes, confidence, numbers and remedies.

use std::path::PathBuf;

use gpumon::analysis::explain::{Format, Logs, read_log, render};
use gpumon::infile::Input;
use gpumon::model::{Alert, Level};
use gpumon::model::{Config, Event};
use gpumon::screen::{Msg, State};
use gpumon::snapshot::{Snapshot, text};
use gpumon::source::replay::ReplaySource;
use serde_json::Value;

const GIB: f64 = (1u64 << 30) as f64;
const MIB: u64 = 1 << 20;

fn log(name: &str) -> PathBuf {
    PathBuf::from(format!("tests/fixtures/logs/{name}.log"))
}

/// `gpumon explain`'s report on the logs at `paths`, each read through gpumon's one reader.
fn explain(paths: &[PathBuf], format: Format) -> Result<String, std::io::Error> {
    let mut logs = Vec::new();
    for p in paths {
        let input = Input::open(p)?;
        logs.push(read_log(&input.name.clone(), input.reader())?);
    }
    Ok(render(&Logs::new(logs, Vec::new()), format, None))
}

/// The one failure `explain` finds in a real log, as JSON.
fn explained(name: &str) -> Value {
    let out = explain(&[log(name)], Format::Json).unwrap();
    let mut v: Value = serde_json::from_str(&out).unwrap();
    let failures = v["failures"].as_array_mut().unwrap();
    assert_eq!(failures.len(), 1, "{name}: {failures:#?}");
    failures.remove(0)
}

fn bytes(v: &Value, field: &str) -> u64 {
    v["numbers"][field]["bytes"].as_u64().unwrap()
}

/// A printed size in GiB, to two decimals as the message printed it.
fn gib(b: u64) -> String {
    format!("{:.2}", b as f64 / GIB)
}

fn head(v: &Value) -> (&str, &str, &str) {
    (
        v["source"].as_str().unwrap(),
        v["class"].as_str().unwrap(),
        v["confidence"].as_str().unwrap(),
    )
}

fn remedy(v: &Value) -> &str {
    v["remedy"].as_str().unwrap()
}

#[test]
fn torch_fragmentation() {
    for (name, cached) in [("torch-fill-frag", "2.87"), ("demo-train-frag", "4.93")] {
        let v = explained(name);
        // From a log line alone, never certain (issue 39): a leak fills a cap the same way.
        assert_eq!(head(&v), ("pytorch", "fragmentation", "likely"), "{name}");
        assert_eq!(bytes(&v, "request"), 512 * MIB);
        assert_eq!(gib(bytes(&v, "cached")), cached);
        assert!(
            remedy(&v).starts_with("Set PYTORCH_ALLOC_CONF=expandable_segments:True"),
            "{name}"
        );
    }
}

#[test]
fn torch_device_full_names_the_other_processes() {
    let v = explained("torch-device-full");
    assert_eq!(head(&v), ("pytorch", "device-full", "certain"));
    assert_eq!(gib(bytes(&v, "request")), "3.49");
    assert_eq!(gib(bytes(&v, "free")), "1.74");
    assert_eq!(
        remedy(&v),
        "Free or move the other processes on this GPU: pid 545 (75.17 GiB)."
    );

    let v = explained("demo-finetune-full");
    assert_eq!(head(&v), ("pytorch", "device-full", "certain"));
    assert_eq!(gib(bytes(&v, "request")), "9.06");
    assert_eq!(gib(bytes(&v, "free")), "4.53");
    assert_eq!(
        remedy(&v),
        "Free or move the other processes on this GPU: pid 414 (59.99 GiB), pid 571 (6.60 GiB), \
         pid 551 (3.01 GiB)."
    );
}

#[test]
fn cupy_pool_limit() {
    let v = explained("cupy-pool-limit");
    assert_eq!(head(&v), ("cupy", "pool-limit", "certain"));
    assert_eq!(bytes(&v, "request"), 805_306_368);
    assert_eq!(bytes(&v, "pool"), 512 * MIB);
    assert_eq!(bytes(&v, "pool_limit"), 1024 * MIB);
    assert!(remedy(&v).starts_with("Raise CUPY_GPU_MEMORY_LIMIT"));
}

#[test]
fn jax_0_11_pool_limit_is_one_jax_failure() {
    let v = explained("jax-pool-limit");
    assert_eq!(head(&v), ("jax", "pool-limit", "likely"));
    assert_eq!(v["line"], 2);
    assert_eq!(v["allocator"], "bfc");
    assert_eq!(bytes(&v, "request"), 1_200_000_000);
    assert_eq!(v["numbers"]["device"], 0);
    assert_eq!(v["numbers"]["op"], "jit_broadcast_in_dim");
    let o = &v["numbers"]["occupancy"];
    assert_eq!(
        (o["used_pct"].as_u64(), o["free_runs"].as_u64()),
        (Some(71), Some(1))
    );
    assert!(remedy(&v).starts_with("Raise XLA_CLIENT_MEM_FRACTION"));
}

#[test]
fn explain_text_of_the_real_logs() {
    let names = [
        "torch-fill-frag",
        "torch-device-full",
        "cupy-pool-limit",
        "jax-pool-limit",
        "demo-train-frag",
        "demo-finetune-full",
    ];
    let paths: Vec<PathBuf> = names.iter().map(|n| log(n)).collect();
    let out = explain(&paths, Format::Text).unwrap();
    for l in out.lines() {
        assert!(l.chars().count() <= 80, "{l}");
    }
    insta::assert_snapshot!("explain_real_logs", out);
}

/// A real recording (the first demo, made on an H100 by `scripts/gpu/record_demo.sh`) replayed
/// through `State`, one sample at a time.
fn demo() -> State {
    replayed("tests/fixtures/recordings/h100-oom-session.ndjson")
}

/// A recording replayed through `State`, one sample at a time.
fn replayed(path: &str) -> State {
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut source = ReplaySource::read(path, file).unwrap();
    let mut state = State::new(Config::new(source.header().interval_ms, 600_000));
    state.update(Msg::from(Event::Started(source.header().machine.clone())));
    for s in source.samples() {
        state.update(Msg::from(Event::Sample(s.unwrap())));
    }
    state
}

fn alert<'a>(state: &'a State, class: &str, pid: u32) -> &'a Alert {
    state
        .machine()
        .alerts
        .iter()
        .find(|a| a.class == class && a.pid == Some(pid))
        .unwrap_or_else(|| {
            panic!(
                "no {class} alert for pid {pid}: {:#?}",
                state.machine().alerts
            )
        })
}

#[test]
fn demo_recording_raises_the_real_alerts() {
    let state = demo();
    let h100 = "GPU-e91a5d01-eed0-4321-a3ac-2714a59b27b8";

    // JAX took 75% of a GPU it had to itself: information, not a warning (it crowds no one).
    let jax = alert(&state, "preallocation", 414);
    assert_eq!(jax.level, Level::Info);
    assert_eq!(jax.title, "pid 414 jax preallocated 75% of GPU0");
    assert!(
        jax.remedy
            .as_deref()
            .unwrap()
            .contains("XLA_PYTHON_CLIENT_PREALLOCATE=false")
    );

    let frag = alert(&state, "fragmentation", 610);
    assert_eq!(frag.level, Level::Failure);
    assert_eq!(frag.confidence.as_deref(), Some("certain"));
    assert_eq!(frag.gpu_uuid.as_deref(), Some(h100));
    assert_eq!(
        frag.title,
        "pid 610 PyTorch OOM: fragmentation, asked 512.00 MiB, 4.93 GiB stranded in the cache"
    );
    for e in [
        "asked 512.00 MiB",
        "4.93 GiB reserved by PyTorch but unallocated",
        "the GPU itself had 93.44 MiB free",
        "the process held 9.47 GiB",
        "/tmp/demo/train.log line 2",
    ] {
        assert!(
            frag.evidence.contains(&e.to_string()),
            "{e}: {:?}",
            frag.evidence
        );
    }
    assert!(
        frag.remedy
            .as_deref()
            .unwrap()
            .contains("expandable_segments:True")
    );

    let full = alert(&state, "device-full", 633);
    assert_eq!(full.confidence.as_deref(), Some("certain"));
    assert_eq!(full.gpu_uuid.as_deref(), Some(h100));
    // The JAX job beside it holds 75 % of the GPU, its default preallocation: the first cause.
    assert_eq!(
        full.title,
        "pid 633 PyTorch OOM: device-full, pid 414 JAX (python3 jax_oom.py) holds 59.99 GiB \
         preallocated, in use unknown (no allocator probe): restart it with \
         XLA_PYTHON_CLIENT_PREALLOCATE=false; asked 9.06 GiB, 4.53 GiB free"
    );
    let others = "pid 414 python3 jax_oom.py (59.99 GiB), pid 571 python3 torch_frag.py \
                  (6.60 GiB), pid 551 python3 cupy_oom.py (3.01 GiB)";
    assert!(
        full.evidence
            .contains(&format!("also on the GPU: {others}")),
        "{:?}",
        full.evidence
    );
    assert!(
        full.evidence
            .contains(&"4.53 GiB free of 79.18 GiB".to_string())
    );
    assert_eq!(
        full.remedy.as_deref(),
        Some(
            "Restart pid 414 with XLA_PYTHON_CLIENT_PREALLOCATE=false, or a smaller \
             XLA_PYTHON_CLIENT_MEM_FRACTION, so its pool holds only what it uses: it holds \
             59.99 GiB preallocated (how much is in use is unknown without the allocator probe), \
             and a running JAX process never gives its pool back. \
             Also on this GPU: pid 571 python3 torch_frag.py (6.60 GiB), pid 551 python3 \
             cupy_oom.py (3.01 GiB)."
        )
    );
    assert_eq!(
        state
            .machine()
            .alerts
            .iter()
            .filter(|a| a.level == Level::Failure)
            .count(),
        2,
        "the two real OOMs, once each"
    );
}

#[test]
fn demo_failure_alerts_read_well_at_80_columns() {
    let state = demo();
    let now = state.machine().last_sample_ms.unwrap();
    let out = text::render(&Snapshot::from_state(&state, now));
    let alerts: String = out
        .lines()
        .skip_while(|l| !l.starts_with("Alerts"))
        .take_while(|l| !l.contains("suspected"))
        .map(|l| format!("{l}\n"))
        .collect();
    for l in alerts.lines() {
        assert!(l.chars().count() <= 80, "{l}");
    }
    insta::assert_snapshot!("demo_failure_alerts", alerts);
}

/// Real OOMs recorded by gpumon on an H100 as they happened (`scripts/gpu/record_ooms.sh`):
/// a JAX pool sized by `XLA_PYTHON_CLIENT_MEM_FRACTION=.02`, and a JAX BFC pool (no preallocation)
/// that failed with its free memory in 20 pieces while another process held the rest of the GPU.
/// XLA's ×0.9 region-growth retries in that log are not failures. The script's CuPy job lived
/// less than a second, between two samples: NVML never listed it, so its log was not found (its
/// failure is in `rec-cupy-limit.log`, checked through `explain` above; `--log` would follow it).
#[test]
fn recorded_pool_limits_and_jax_fragmentation() {
    let state = replayed("tests/fixtures/recordings/h100-pool-limits-jax-frag.ndjson");
    let failures: Vec<&Alert> = state
        .machine()
        .alerts
        .iter()
        .filter(|a| a.level == Level::Failure)
        .collect();
    assert_eq!(failures.len(), 2, "{failures:#?}");

    let jax_limit = alert(&state, "pool-limit", 433);
    assert_eq!(jax_limit.confidence.as_deref(), Some("certain"));
    assert!(
        jax_limit
            .evidence
            .iter()
            .any(|e| e.contains("XLA_PYTHON_CLIENT_MEM_FRACTION=.02 sized the pool")),
        "{jax_limit:#?}"
    );
    assert!(
        jax_limit
            .remedy
            .as_deref()
            .unwrap()
            .contains("XLA_PYTHON_CLIENT_MEM_FRACTION (now .02)")
    );

    let frag = alert(&state, "fragmentation", 552);
    assert_eq!(frag.confidence.as_deref(), Some("likely"));
    assert!(frag.title.contains("asked 953.67 MiB"), "{}", frag.title);
    assert!(
        frag.evidence
            .iter()
            .any(|e| e.contains("30% free in 20 pieces")),
        "{frag:#?}"
    );
    assert!(
        frag.remedy
            .as_deref()
            .unwrap()
            .contains("TF_GPU_ALLOCATOR=cuda_malloc_async")
    );
}
