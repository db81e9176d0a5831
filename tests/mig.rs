//! MIG without a MIG GPU: the lent GPU machines run with MIG off (and must stay so), so a GPU
//! with MIG on is built from NVML's own return shapes (`MigMode`, a MIG device's name, instance
//! ids and `MemoryInfo`, and `ProcessInfo` with its instance ids) through the NVML reader's
//! conversions, then shown on screen, in snapshots (JSON, schema, text) and in recordings.

use std::path::Path;

use gpumon::model::{Config, Event};
use gpumon::screen::{Msg, State};
use gpumon::snapshot::{Snapshot, text};
use gpumon::source::nvml::mig::MigSlot;
use gpumon::source::scripted::build::{GIB, MIB, gpu, machine, nvml_process, with_mig};
use gpumon::source::{Framework, Sample};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::struct_wrappers::device::{MemoryInfo, ProcessInfo};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::Value;

/// 2025-11-22 12:01:40 UTC.
const T0: u64 = 1_763_812_900_000;

/// A MIG device as NVML answers for it (an H100 80GB split 3g.40gb + 2g.20gb + 1g.10gb); the
/// last one's memory is not readable.
fn slot(gi: u32, profile: &str, total_mib: u64, used: u64) -> MigSlot {
    MigSlot {
        uuid: Ok(format!("MIG-0c5e2d7a-{gi:04}-5a1b-9c3d-4e5f60718293")),
        name: Ok(format!("NVIDIA H100 80GB HBM3 MIG {profile}")),
        gpu_instance_id: Ok(gi),
        compute_instance_id: Ok(0),
        memory: if gi == 13 {
            Err(NvmlError::NoPermission)
        } else {
            Ok(MemoryInfo {
                free: total_mib * MIB - used,
                reserved: 0,
                total: total_mib * MIB,
                used,
                version: 0x0200_0028,
            })
        },
    }
}

fn info(pid: u32, used: Option<u64>, gi: u32) -> ProcessInfo {
    ProcessInfo {
        pid,
        used_gpu_memory: used.map_or(UsedGpuMemory::Unavailable, UsedGpuMemory::Used),
        gpu_instance_id: Some(gi),
        compute_instance_id: Some(0),
    }
}

fn mig_sample(k: u64) -> Sample {
    let mut g = gpu(0, 81_559 * MIB, 0, 0);
    g.name = "NVIDIA H100 80GB HBM3".into();
    let big = 18 * GIB + k * 64 * MIB;
    let g = with_mig(
        g,
        vec![
            slot(1, "3g.40gb", 40_192, big + 200 * MIB),
            slot(5, "2g.20gb", 19_968, 6 * GIB),
            slot(13, "1g.10gb", 9_856, 0),
        ],
    );
    let processes = vec![
        nvml_process(
            &g,
            info(7001, Some(big), 1),
            Framework::Pytorch,
            "python train.py",
        ),
        nvml_process(&g, info(7002, None, 5), Framework::Jax, "python eval.py"),
        nvml_process(
            &g,
            info(7003, Some(2 * GIB), 5),
            Framework::Jax,
            "python probe.py",
        ),
    ];
    let used = big + 8 * GIB + 200 * MIB;
    let mut g = g;
    g.memory = gpumon::source::Reading::Value(gpumon::source::Memory {
        total: 81_559 * MIB,
        used,
        free: 81_559 * MIB - used - 480 * MIB,
        reserved: gpumon::source::Reading::Value(480 * MIB),
    });
    Sample {
        at_ms: T0 + k * 1000,
        gpus: vec![g],
        processes,
        ..Default::default()
    }
}

fn mig_state() -> State {
    let mut s = State::new(Config {
        color: true,
        ..Config::new(1000, 60_000)
    });
    s.update(Msg::from(Event::Started(machine())));
    for k in 0..30 {
        s.update(Msg::from(Event::Sample(mig_sample(k))));
    }
    s
}

#[test]
fn mig_rows_on_screen() {
    let s = mig_state();
    for (w, h) in [(80, 24), (120, 40), (200, 50)] {
        let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
        terminal.draw(|f| gpumon::view::render(f, &s)).unwrap();
        insta::assert_snapshot!(format!("mig_{w}x{h}"), terminal.backend());
    }
}

#[test]
fn mig_instances_and_process_ids_are_in_the_snapshot_and_its_text() {
    let snap = Snapshot::from_state(&mig_state(), T0 + 30_000);
    let doc = serde_json::to_value(&snap).unwrap();
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/snapshot.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let errors = validator.iter_errors(&doc).into_errors();
    assert!(errors.is_empty(), "{errors}");
    let mig = doc["gpus"][0]["mig"].as_array().unwrap();
    assert_eq!(mig.len(), 3);
    assert_eq!(mig[1]["profile"], "2g.20gb");
    assert_eq!(mig[1]["processes"], 2);
    assert_eq!(mig[2]["memory_used"], Value::Null);
    assert_eq!(mig[2]["unavailable"]["memory"], "no permission");
    let eval = doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == 7002)
        .unwrap();
    assert_eq!(
        (
            eval["gpu_instance_id"].as_u64(),
            eval["compute_instance_id"].as_u64()
        ),
        (Some(5), Some(0))
    );
    let back: Snapshot = serde_json::from_value(doc).unwrap();
    assert_eq!(back, snap);
    let out = text::render(&snap);
    assert!(
        out.contains("MIG 5/0 2g.20gb: used 6G of 19.5G, 2 process(es)"),
        "{out}"
    );
    assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
}

#[test]
fn a_recorded_mig_sample_reads_back_the_same() {
    let s = mig_sample(3);
    let line = serde_json::to_string(&s).unwrap();
    assert!(line.contains("\"gpu_instance_id\":5") && line.contains("\"mig\":["));
    assert_eq!(serde_json::from_str::<Sample>(&line).unwrap(), s);
}
