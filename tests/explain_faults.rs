//! `gpumon explain` on memory faults that are not OOMs: each framework's log (tests/fixtures/
//! faults: the torch 2.11 and cupy 14.2 lines are what an H100 printed, the JAX, TensorFlow and
//! NCCL ones follow their sources' wording), alone and with the kernel's Xid lines (a saved
//! `dmesg -T`, a journal), a log cut mid-line; a real misaligned address with its Xid 13, from
//! its logs and from a recording of it; text within 80 columns and JSON.

#[path = "common/replay.rs"]
mod replay;

use std::process::Command;

use replay::replay_alerts;

const DIR: &str = "tests/fixtures/faults";

fn explain(args: &[&str]) -> String {
    let files: Vec<String> = args.iter().map(|a| format!("{DIR}/{a}")).collect();
    let out = Command::new(env!("CARGO_BIN_EXE_gpumon"))
        .arg("explain")
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for l in text.lines() {
        assert!(l.chars().count() <= 80, "{l}");
    }
    text
}

fn json(args: &[&str]) -> serde_json::Value {
    let files: Vec<String> = args.iter().map(|a| format!("{DIR}/{a}")).collect();
    let out = Command::new(env!("CARGO_BIN_EXE_gpumon"))
        .args(["explain", "--format", "json"])
        .args(&files)
        .output()
        .unwrap();
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn each_frameworks_fault_is_one_failure_of_its_own_class() {
    for (file, source, class) in [
        ("torch-illegal-address.log", "pytorch", "illegal-address"),
        ("torch-device-assert.log", "pytorch", "device-assert"),
        ("torch-ecc.log", "pytorch", "uncorrectable-ecc"),
        ("cupy-illegal-address.log", "cupy", "illegal-address"),
        ("jax-illegal-address.log", "jax", "illegal-address"),
        ("tf-launch-failure.log", "tensorflow", "launch-failure"),
        ("nccl-illegal-address.log", "nccl", "illegal-address"),
    ] {
        let v = json(&[file]);
        let failures = v["failures"].as_array().unwrap();
        assert_eq!(failures.len(), 1, "{file}: {failures:#?}");
        assert_eq!(failures[0]["source"], source, "{file}");
        assert_eq!(failures[0]["class"], class, "{file}");
        assert_eq!(
            failures[0]["confidence"], "likely",
            "{file}: no Xid to say more"
        );
    }
    let text = explain(&["torch-illegal-address.log"]);
    assert!(text.contains(":8: PyTorch illegal-address"), "{text}");
    assert!(
        text.contains("0 allocation failure(s), 1 memory fault(s)"),
        "{text}"
    );
}

#[test]
fn a_fault_with_the_kernels_xid_line() {
    let text = explain(&["cupy-illegal-address.log", "dmesg-T.txt"]);
    assert!(text.contains("CuPy illegal-address (certain)"), "{text}");
    assert!(
        text.contains("dmesg-T.txt:2: Xid 31 (GPU memory page fault) on PCI"),
        "{text}"
    );
    assert!(text.contains("not the GPU"), "{text}");
    assert!(text.contains("1 Xid(s) in the kernel log"), "{text}");
    let v = json(&["torch-ecc.log", "journal-ecc.txt"]);
    let f = &v["failures"][0];
    assert_eq!(f["class"], "uncorrectable-ecc");
    assert_eq!(f["xid"]["code"], 48);
    assert_eq!(f["xid"]["pid"], 4121);
    assert_eq!(f["xid"]["time"], "2026-11-24T03:12:07Z");
    assert_eq!(v["xids"].as_array().unwrap().len(), 2);
    assert_eq!(v["xids"][1]["code"], 63);
    assert_eq!(v["xids"][1]["pid"], serde_json::Value::Null);
}

/// A real misaligned address on an H100 (`memory_fault_programs.py cupy-misaligned`): CuPy's
/// error and the kernel's three Xid 13 lines for it, the last with the pid: one Xid.
#[test]
fn a_real_misaligned_address_with_its_xid_13() {
    let v = json(&["cupy-misaligned-address.log", "dmesg-misaligned.txt"]);
    let failures = v["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{failures:#?}");
    let f = &failures[0];
    assert_eq!(
        (&f["source"], &f["class"], &f["confidence"]),
        (
            &serde_json::json!("cupy"),
            &serde_json::json!("misaligned-address"),
            &serde_json::json!("certain")
        )
    );
    assert_eq!(f["xid"]["code"], 13);
    // The driver's three lines for it are one Xid: the first line's words, the last's pid.
    let xids = v["xids"].as_array().unwrap();
    assert_eq!(xids.len(), 1, "{xids:#?}");
    assert_eq!(
        (&xids[0]["lines"], &xids[0]["pid"]),
        (&serde_json::json!(3), &serde_json::json!(475))
    );
    assert_eq!(
        xids[0]["detail"],
        "Graphics SM Warp Exception on (GPC 1, TPC 4, SM 0): Misaligned Address"
    );
}

/// `gpumon record` of the same fault on the H100: the Xid, joined from NVML's event and the
/// kernel line, reached the sampler 2.1 s after CuPy's error reached its log. The fault waits for
/// it: both alerts name each other, and the fault's is certain.
#[test]
fn a_recorded_fault_whose_xid_came_later_is_joined_with_it() {
    let v = json(&["cupy-misaligned-recorded.ndjson.zst"]);
    let alerts = v["recordings"][0]["alerts"].as_array().unwrap();
    let classes: Vec<&str> = alerts
        .iter()
        .map(|a| a["class"].as_str().unwrap())
        .collect();
    assert_eq!(classes, ["xid", "misaligned-address"], "{alerts:#?}");
    let (xid, fault) = (&alerts[0], &alerts[1]);
    assert_eq!(fault["confidence"], "certain");
    assert_eq!(
        fault["title"],
        "a misaligned memory access (Xid 13) in pid 475: a bug in the program or one of its kernels, not the GPU"
    );
    assert!(
        xid["evidence"].as_array().unwrap().iter().any(|l| l
            .as_str()
            .unwrap()
            .starts_with("near it, in a log: a misaligned")),
        "{xid:#?}"
    );
}

#[test]
fn a_kernel_log_alone_and_a_log_cut_mid_line() {
    let text = explain(&["dmesg-T.txt"]);
    assert!(
        text.starts_with("tests/fixtures/faults/dmesg-T.txt:2: Xid 31"),
        "{text}"
    );
    assert!(text.contains("ACCESS_TYPE_VIRT_WRITE"), "{text}");
    let cut = explain(&["cut-mid-line.log"]);
    assert!(
        cut.ends_with("no allocation failures found in what was read\n")
            && cut.contains("its last line, line 2, has no newline"),
        "{cut}"
    );
}

/// A recording of the live path (what `gpumon record` writes): pid 4121 on GPU0, the kernel's
/// Xid 31 for it, then its log's illegal access a second later; `explain` replays it into one
/// joined verdict, and its Xid alert.
#[test]
fn a_recordings_fault_is_joined_with_the_recorded_xid() {
    use gpumon::oom::failure::{Dialect, Failure, FaultKind};
    use gpumon::sample::GpuEvent;
    use gpumon::sample::health::{EventOrigin, GpuEventKind};
    use gpumon::source::scripted::build::{GIB, gpu, machine, process};
    use gpumon::source::{Framework, Sample};

    const T0: u64 = 1_795_835_520_000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fault.ndjson");
    let file = std::fs::File::create(&path).unwrap();
    let header = gpumon::recording::Header::new(machine(), 1000);
    let mut w = gpumon::recording::Writer::new(file, &header).unwrap();
    let g0 = gpu(0, 80 * GIB, 10 * GIB, GIB);
    for k in 0..10u64 {
        let at_ms = T0 + k * 1000;
        let events = if k == 5 {
            vec![GpuEvent {
                at_ms: at_ms - 500,
                gpu_uuid: Some(g0.uuid.clone()),
                pci: Some("0000:19:00".into()),
                kind: GpuEventKind::Xid { code: Some(31) },
                pid: Some(4121),
                process: Some("python3".into()),
                origin: EventOrigin::Nvml,
                detail: Some("MMU Fault: ENGINE GRAPHICS faulted @ 0x83be_dbe00000".into()),
            }]
        } else {
            Vec::new()
        };
        let failures = if k == 6 {
            vec![Failure {
                at_ms,
                log: "/srv/log/4121.out".into(),
                line: 8,
                pid: Some(4121),
                message:
                    "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"
                        .into(),
                source: Some(Dialect::Pytorch),
                allocator: None,
                numbers: Default::default(),
                fault: Some(FaultKind::IllegalAddress),
                ..Failure::default()
            }]
        } else {
            Vec::new()
        };
        let processes = if k < 7 {
            vec![process(
                4121,
                &g0,
                9 * GIB,
                Framework::Pytorch,
                "python3 wild.py",
            )]
        } else {
            Vec::new()
        };
        w.sample(&Sample {
            at_ms,
            gpus: vec![g0.clone()],
            processes,
            failures,
            events,
            ..Default::default()
        })
        .unwrap();
    }
    drop(w);
    let alerts = replay_alerts(&path);
    let titles: Vec<&str> = alerts
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    assert!(
        titles.contains(&"an illegal memory access (Xid 31) in pid 4121: a bug in the program or one of its kernels, not the GPU"),
        "{titles:#?}"
    );
    assert!(
        titles
            .iter()
            .any(|t| t.starts_with("Xid 31 (GPU memory page fault) on GPU0 at")),
        "{titles:#?}"
    );
}
