//! Screens of GPU memory health (issue 28): an H100 with uncorrected ECC errors and a row remap
//! pending beside a healthy one, an Xid 48 heard from NVML and the job's uncorrectable-ECC fault
//! read from its log; the GPU line's notes, the alerts pane and its detail (`a`). States are
//! built only through `State::update` and drawn into a `TestBackend` (reviewed insta snapshots).

use gpumon::input::Action;
use gpumon::model::{Config, Event};
use gpumon::oom::failure::FaultKind;
use gpumon::oom::failure::{Dialect, Failure};
use gpumon::sample::health::{EccCount, EccMode, EventOrigin, GpuEventKind, Health, RemappedRows};
use gpumon::sample::{GpuEvent, Reading, Sample};
use gpumon::screen::{Msg, State};
use gpumon::source::Framework;
use gpumon::source::scripted::build::{GIB, MIB, gpu, machine, process};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// 2025-11-22 12:01:40 UTC.
const T0: u64 = 1_763_812_900_000;

fn health(uncorrected: u64, pending: bool) -> Health {
    Health {
        ecc_mode: Reading::Value(EccMode {
            current: true,
            pending: true,
        }),
        ecc_volatile: Reading::Value(EccCount {
            corrected: 3,
            uncorrected,
        }),
        ecc_aggregate: Reading::Value(EccCount {
            corrected: 40,
            uncorrected,
        }),
        remapped_rows: Reading::Value(RemappedRows {
            corrected: 0,
            uncorrected: u64::from(pending),
            pending,
            failure: false,
        }),
        retired_pages: Reading::na("not supported on this GPU"),
    }
}

/// Tick `k`: GPU1 goes bad at tick 20 (Xid 48, then the job's log says so at tick 21).
fn sample(k: u64) -> Sample {
    let total = 81_559 * MIB;
    let at_ms = T0 + k * 1000;
    let bad = k >= 20;
    let mut g0 = gpu(0, total, 20 * GIB, 512 * MIB);
    let mut g1 = gpu(1, total, if k < 21 { 60 * GIB } else { 0 }, 512 * MIB);
    for g in [&mut g0, &mut g1] {
        g.name = "NVIDIA H100 80GB HBM3".into();
    }
    g0.health = Some(health(0, false));
    g1.health = Some(health(if bad { 2 } else { 0 }, bad));
    let mut processes = vec![process(
        3001,
        &g0,
        19 * GIB,
        Framework::Jax,
        "python serve.py",
    )];
    if k < 21 {
        processes.push(process(
            4121,
            &g1,
            59 * GIB,
            Framework::Pytorch,
            "python train.py",
        ));
    }
    let events = if k == 20 {
        vec![GpuEvent {
            at_ms,
            gpu_uuid: Some(g1.uuid.clone()),
            pci: None,
            kind: GpuEventKind::Xid { code: Some(48) },
            pid: None,
            process: None,
            origin: EventOrigin::Nvml,
            detail: None,
        }]
    } else {
        Vec::new()
    };
    let failures = if k == 21 {
        vec![Failure {
            at_ms,
            log: "/srv/log/4121.out".into(),
            line: 812,
            pid: Some(4121),
            message: "torch.AcceleratorError: CUDA error: uncorrectable ECC error encountered"
                .into(),
            source: Some(Dialect::Pytorch),
            allocator: None,
            numbers: Default::default(),
            fault: Some(FaultKind::UncorrectableEcc),
            ..Failure::default()
        }]
    } else {
        Vec::new()
    };
    Sample {
        at_ms,
        gpus: vec![g0, g1],
        processes,
        failures,
        events,
        ..Default::default()
    }
}

fn state(ticks: u64) -> State {
    let mut s = State::new(Config {
        color: true,
        ..Config::new(1000, 60_000)
    });
    s.update(Msg::from(Event::Started(machine())));
    for k in 0..ticks {
        s.update(Msg::from(Event::Sample(sample(k))));
    }
    s
}

#[track_caller]
fn check(name: &str, state: &State) {
    for (w, h) in [(80, 24), (120, 40)] {
        let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
        terminal.draw(|f| gpumon::view::render(f, state)).unwrap();
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), terminal.backend());
    }
}

#[test]
fn a_healthy_gpu_says_nothing_of_its_health() {
    let s = state(10);
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    terminal.draw(|f| gpumon::view::render(f, &s)).unwrap();
    let text = format!("{:?}", terminal.backend());
    for word in ["ECC", "remap", "Xid"] {
        assert!(!text.contains(word), "{word} on a healthy screen");
    }
}

#[test]
fn a_gpu_with_errors_and_a_pending_remap() {
    check("health_errors_remap_pending", &state(30));
}

#[test]
fn the_alerts_pane_and_the_faults_detail() {
    let mut s = state(30);
    s.update(Msg::Action(Action::TogglePane));
    check("health_alerts_pane", &s);
}

#[test]
fn the_snapshot_carries_health_and_xids_valid_read_back_and_in_text() {
    let s = state(30);
    let snap = gpumon::snapshot::Snapshot::from_state(&s, T0 + 30_000);
    let doc = serde_json::to_value(&snap).unwrap();
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../assets/snapshot.schema.json")).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let gpu1 = &doc["gpus"][1];
    assert_eq!(gpu1["health"]["remapped_rows"]["pending"], true);
    assert_eq!(gpu1["health"]["retired_pages"], serde_json::Value::Null);
    assert_eq!(
        gpu1["health"]["unavailable"]["retired_pages"],
        "not supported on this GPU"
    );
    assert_eq!(gpu1["xid"]["last_code"], 48);
    assert!(doc["gpus"][0].get("xid").is_none(), "absent when none");
    // Back into a machine (what `gpumon diff` and remote hosts read): the same troubles.
    let back = snap.to_machine(&Config::new(1000, 60_000));
    let uuid = snap.gpus[1].uuid.clone();
    assert_eq!(back.gpus[&uuid].troubles, s.machine().gpus[&uuid].troubles);
    assert_eq!(back.gpus[&uuid].xids, s.machine().gpus[&uuid].xids);
    let text = gpumon::snapshot::text::render(&snap);
    // The paragraph is wrapped at 80 columns.
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        text.contains("remapped rows 0 corrected, 1 uncorrected, a remap pending (reset the GPU)"),
        "{text}"
    );
    assert!(text.contains("Xid: 1 heard, the last 48 at"), "{text}");
}
