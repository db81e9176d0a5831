//! GPU faults: a GPU falling off the bus (and coming back), per-field NVML errors.

use gpumon::snapshot::{GpuState, Snapshot};
use gpumon::source::scripted::build::{self, GIB};
use gpumon::source::{GpuReadout, GpuSample, GpuStatus, Reading};

use super::{all_found, feed, listed, live, screen, state};

const T0: u64 = 1_763_800_000_000;

/// GPU 1 as NVML's conversion layer lists a GPU whose memory query said `GpuLost`.
fn lost(g: &GpuSample) -> GpuSample {
    let why = "GPU fell off the bus".to_string();
    GpuSample {
        status: GpuStatus::Lost {
            reason: why.clone(),
        },
        memory: Reading::na(why.clone()),
        utilization: Reading::na(why.clone()),
        temperature_c: Reading::na(why.clone()),
        power_mw: Reading::na(why),
        ..g.clone()
    }
}

#[test]
fn a_gpu_falls_off_the_bus_the_others_keep_updating_and_it_comes_back() {
    let g0 = build::gpu(0, 80 * GIB, 10 * GIB, GIB);
    let g1 = build::gpu(1, 80 * GIB, 20 * GIB, GIB);
    // Ticks 0-1 fine, 2-4 GPU 1 lost (NVML lists no processes for it), 5- back.
    let mut source = live(
        move |tick| {
            let mut a = g0.clone();
            a.memory = Reading::Value(gpumon::source::Memory {
                used: (10 + tick as u64) * GIB,
                free: (69 - tick as u64) * GIB,
                ..a.memory.value().unwrap().clone()
            });
            let down = (2..5).contains(&tick);
            let b = if down { lost(&g1) } else { g1.clone() };
            let mut processes = vec![listed(10, &a, GIB)];
            if !down {
                processes.push(listed(11, &b, 5 * GIB));
            }
            Ok(GpuReadout {
                gpus: vec![a, b],
                processes,
            })
        },
        all_found,
    );
    let mut st = state();
    feed(&mut source, &mut st, T0, 4);
    let uuid1 = build::gpu(1, 1, 0, 0).uuid;
    let t1 = &st.machine().gpus[&uuid1];
    assert_eq!(
        t1.lost_since_ms,
        Some(T0 + 2000),
        "lost since its first failed tick"
    );
    assert!(matches!(t1.sample.status, GpuStatus::Lost { .. }));
    assert_eq!(t1.total, Some(80 * GIB), "its scale is kept while lost");
    assert!(t1.segments.is_none());
    let t0 = &st.machine().gpus[&build::gpu(0, 1, 0, 0).uuid];
    assert_eq!(t0.used.len(), 4);
    assert_eq!(
        t0.used.last().unwrap().value,
        Some(13 * GIB),
        "GPU 0 keeps updating"
    );
    assert!(screen(&st).contains("lost since"), "{}", screen(&st));
    let snap = Snapshot::from_state(&st, T0 + 3000);
    assert!(
        matches!(&snap.gpus[1].status, GpuState::Lost { reason, .. } if reason == "GPU fell off the bus")
    );

    feed(&mut source, &mut st, T0 + 4000, 2);
    let t1 = &st.machine().gpus[&uuid1];
    assert_eq!(t1.lost_since_ms, None, "back once NVML sees it again");
    assert_eq!(t1.sample.status, GpuStatus::Ok);
    assert_eq!(
        t1.used.len(),
        6,
        "the same history continues, with a gap while lost"
    );
    let gap: Vec<_> = t1.used.iter().map(|p| p.value.is_some()).collect();
    assert_eq!(gap, [true, true, false, false, false, true]);
    assert_eq!(st.machine().gpus.len(), 2);
    assert!(!screen(&st).contains("lost since"));
}

#[test]
fn per_field_errors_make_that_field_na_and_change_nothing_else() {
    let base = build::gpu(0, 80 * GIB, 10 * GIB, GIB);
    let other = build::gpu(1, 80 * GIB, 20 * GIB, GIB);
    let run = |broken: GpuSample| {
        let other = other.clone();
        let mut source = live(
            move |_| {
                Ok(GpuReadout {
                    processes: vec![listed(10, &broken, GIB), listed(11, &other, GIB)],
                    gpus: vec![broken.clone(), other.clone()],
                })
            },
            all_found,
        );
        let mut st = state();
        feed(&mut source, &mut st, T0, 3);
        Snapshot::from_state(&st, T0 + 2000)
    };
    let good = run(base.clone());
    // The reasons the conversion layer gives for NotSupported, NoPermission, Timeout and
    // FailedToLoadSymbol (tested per `NvmlError` kind in src/source/nvml/convert/tests.rs).
    type Break = fn(&mut GpuSample, &str);
    let cases: [(&str, Break); 5] = [
        ("temperature_c", |g, why| g.temperature_c = Reading::na(why)),
        ("power_mw", |g, why| g.power_mw = Reading::na(why)),
        ("utilization_percent", |g, why| {
            g.utilization = Reading::na(why)
        }),
        ("pci_bus_id", |g, why| g.pci_bus_id = Reading::na(why)),
        ("memory", |g, why| g.memory = Reading::na(why)),
    ];
    for why in [
        "not supported on this GPU",
        "no permission",
        "timed out",
        "not available in this driver version",
    ] {
        for (field, break_it) in cases {
            let mut g = base.clone();
            break_it(&mut g, why);
            let snap = run(g);
            let (gpu, ok) = (&snap.gpus[0], &good.gpus[0]);
            assert_eq!(gpu.unavailable.get(field).map(String::as_str), Some(why));
            assert_eq!(gpu.unavailable.len(), 1, "{field}: {:?}", gpu.unavailable);
            assert_eq!(
                gpu.status,
                GpuState::Ok,
                "{field}: a field error is not a lost GPU"
            );
            let mut same = gpu.clone();
            same.unavailable.clear();
            match field {
                "temperature_c" => same.temperature_c = ok.temperature_c,
                "power_mw" => same.power_mw = ok.power_mw,
                "utilization_percent" => same.utilization_percent = ok.utilization_percent,
                "pci_bus_id" => same.pci_bus_id.clone_from(&ok.pci_bus_id),
                _ => {
                    same.memory.clone_from(&ok.memory);
                    same.used_history.clone_from(&ok.used_history);
                    // Its coarse history has a gap where the memory could not be read.
                    assert!(
                        same.used_tiers
                            .iter()
                            .all(|t| t.min.iter().all(Option::is_none))
                    );
                    same.used_tiers.clone_from(&ok.used_tiers);
                }
            }
            assert_eq!(&same, ok, "{field}: nothing else on the GPU changes");
            assert_eq!(
                snap.gpus[1], good.gpus[1],
                "{field}: the other GPU is untouched"
            );
            assert_eq!(
                snap.processes, good.processes,
                "{field}: processes untouched"
            );
        }
    }
}

#[test]
fn per_field_errors_on_a_process_are_na_and_its_gpu_sums_the_rest() {
    let g = build::gpu(0, 80 * GIB, 10 * GIB, GIB);
    let mut source = live(
        move |_| {
            let mut unknown = listed(11, &g, 0);
            unknown.device_memory = Reading::na("not reported by the driver");
            Ok(GpuReadout {
                processes: vec![listed(10, &g, 3 * GIB), unknown],
                gpus: vec![g.clone()],
            })
        },
        all_found,
    );
    let mut st = state();
    feed(&mut source, &mut st, T0, 2);
    let t = st.machine().gpus.values().next().unwrap();
    let seg = t.segments.unwrap();
    assert_eq!(
        (seg.processes, seg.other, t.unattributed),
        (3 * GIB, 7 * GIB, 1)
    );
    let snap = Snapshot::from_state(&st, T0 + 1000);
    let p11 = snap.processes.iter().find(|p| p.pid == 11).unwrap();
    assert_eq!(p11.device_memory, None);
    assert_eq!(
        p11.unavailable.get("device_memory").map(String::as_str),
        Some("not reported by the driver")
    );
    assert_eq!(p11.command.as_deref(), Some("python train.py"));
}
