//! GPU events and memory faults into alerts: an ECC death on a GPU with a remap pending, an
//! illegal access with its Xid 31, an Xid for a GPU no longer listed, health alerts raised once,
//! a fault that waits for the Xid that comes after it.

use super::*;
use crate::analysis::findings;
use crate::model::{Config, Event};
use crate::oom::failure::FaultKind;
use crate::oom::failure::{Dialect, Failure};
use crate::pipeline::apply;
use crate::sample::Reading;
use crate::sample::health::{EccCount, EccMode, Health, RemappedRows};
use crate::source::scripted::build::{self, GIB};
use crate::source::{Framework, Sample};

const T: u64 = 1_795_835_527_000; // 03:12:07 UTC

fn health(pending: bool) -> Health {
    Health {
        ecc_mode: Reading::Value(EccMode {
            current: true,
            pending: true,
        }),
        ecc_volatile: Reading::Value(EccCount {
            corrected: 0,
            uncorrected: u64::from(pending),
        }),
        ecc_aggregate: Reading::Value(EccCount::default()),
        remapped_rows: Reading::Value(RemappedRows {
            uncorrected: u64::from(pending),
            pending,
            ..RemappedRows::default()
        }),
        retired_pages: Reading::na("not supported on this GPU"),
    }
}

/// A machine with GPU0..2 (GPU2 with `pending`), pid 4121 on GPU2, after `events` at `T`.
fn machine(pending: bool, events: Vec<GpuEvent>) -> Machine {
    let gpus: Vec<_> = (0..3)
        .map(|i| {
            let mut g = build::gpu(i, 80 * GIB, 10 * GIB, GIB);
            g.health = Some(health(pending && i == 2));
            g
        })
        .collect();
    let p = build::process(
        4121,
        &gpus[2],
        9 * GIB,
        Framework::Pytorch,
        "python train.py",
    );
    let mut m = Machine::new(Config::new(1000, 60_000));
    apply(&mut m, Event::Started(build::machine()));
    apply(
        &mut m,
        Event::Sample(Sample {
            at_ms: T,
            gpus,
            processes: vec![p],
            events,
            ..Default::default()
        }),
    );
    m
}

fn xid(code: u64, gpu: &Machine, index: u32, pid: Option<u32>) -> GpuEvent {
    let uuid = gpu.gpus_in_order()[index as usize].sample.uuid.clone();
    GpuEvent {
        at_ms: T,
        gpu_uuid: Some(uuid),
        pci: None,
        kind: GpuEventKind::Xid { code: Some(code) },
        pid,
        process: pid.map(|_| "python".to_string()),
        origin: EventOrigin::Nvml,
        detail: None,
    }
}

fn fault(kind: FaultKind, message: &str) -> Failure {
    Failure {
        at_ms: T + 900,
        log: "/srv/log/4121.out".into(),
        line: 812,
        pid: Some(4121),
        message: message.into(),
        source: Some(Dialect::Pytorch),
        allocator: None,
        numbers: Default::default(),
        fault: Some(kind),
        ..Failure::default()
    }
}

#[test]
fn an_ecc_death_on_a_gpu_with_a_remap_pending() {
    let base = machine(true, Vec::new());
    let m = machine(true, vec![xid(48, &base, 2, None)]);
    let f = fault(
        FaultKind::UncorrectableEcc,
        "RuntimeError: CUDA error: uncorrectable ECC error encountered",
    );
    let a = crate::analysis::fault::alert(&f, FaultKind::UncorrectableEcc, &m);
    assert_eq!(
        a.title,
        "pid 4121 died of an uncorrectable ECC error on GPU2 (Xid 48 at 03:12:07); GPU2 has a row remap pending: reset it before the next job"
    );
    assert_eq!(
        (a.class.as_str(), a.confidence.as_deref()),
        ("uncorrectable-ecc", Some("certain"))
    );
    assert!(
        a.remedy
            .unwrap()
            .starts_with("reset GPU2 once no process uses it")
    );
}

#[test]
fn an_illegal_access_with_its_xid_31_is_the_programs_bug() {
    let base = machine(false, Vec::new());
    let m = machine(false, vec![xid(31, &base, 2, Some(4121))]);
    let f = fault(
        FaultKind::IllegalAddress,
        "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
    );
    let a = crate::analysis::fault::alert(&f, FaultKind::IllegalAddress, &m);
    assert_eq!(
        a.title,
        "an illegal memory access (Xid 31) in pid 4121: a bug in the program or one of its kernels, not the GPU"
    );
    // Without an Xid it says less, and not "certain".
    let alone = crate::analysis::fault::alert(&f, FaultKind::IllegalAddress, &base);
    assert_eq!(alone.confidence.as_deref(), Some("likely"));
    assert!(alone.title.contains("no Xid heard"), "{}", alone.title);
}

#[test]
fn events_become_alerts_with_the_gpu_health_and_a_fault_nearby() {
    let base = machine(true, Vec::new());
    let e = xid(48, &base, 2, Some(4121));
    let mut m = machine(true, Vec::new());
    m.add_alerts(findings(
        &m,
        &[fault(
            FaultKind::UncorrectableEcc,
            "CUDA error: uncorrectable ECC error encountered",
        )],
        &[],
        &[],
        T,
    ));
    let a = &alerts(&[e], &m, &[])[0];
    assert_eq!(
        a.title,
        "Xid 48 (double-bit ECC error) on GPU2 at 03:12:07, pid 4121 (python)"
    );
    assert_eq!(a.level, Level::Failure);
    assert!(
        a.evidence
            .iter()
            .any(|l| l == "GPU2 now: row remap pending: reset"),
        "{:?}",
        a.evidence
    );
    assert!(
        a.evidence
            .iter()
            .any(|l| l.starts_with("near it, in a log: pid 4121 died of"))
    );
}

#[test]
fn an_xid_for_a_gpu_no_longer_listed_and_an_unknown_code() {
    let m = machine(false, Vec::new());
    let e = GpuEvent {
        at_ms: T,
        gpu_uuid: None,
        pci: Some("0000:3b:00".into()),
        kind: GpuEventKind::Xid { code: Some(79) },
        pid: None,
        process: None,
        origin: EventOrigin::Kernel,
        detail: Some("GPU has fallen off the bus.".into()),
    };
    let a = &alerts(std::slice::from_ref(&e), &m, &[])[0];
    assert_eq!(
        a.title,
        "Xid 79 (GPU has fallen off the bus) on the GPU at PCI 0000:3b:00 (not listed by NVML) at 03:12:07"
    );
    assert_eq!(a.gpu_uuid, None);
    let odd = GpuEvent {
        kind: GpuEventKind::Xid { code: None },
        ..e
    };
    let a = &alerts(&[odd], &m, &[])[0];
    assert!(a.title.starts_with("an Xid of unknown code on"));
    assert!(a.remedy.as_deref().unwrap().contains("Xid catalogue"));
}

#[test]
fn health_alerts_are_raised_once_per_gpu() {
    let m = machine(true, Vec::new());
    let titles: Vec<&str> = m.alerts.iter().map(|a| a.title.as_str()).collect();
    assert!(
        titles.contains(&"GPU2: row remap pending: reset"),
        "{titles:?}"
    );
    assert!(
        titles.contains(&"GPU2: 1 uncorrected ECC error"),
        "{titles:?}"
    );
    assert!(crate::analysis::health::alerts(&m, T + 1000).is_empty());
}

#[test]
fn a_fault_from_a_log_without_a_process_takes_the_xid_of_the_only_gpu_that_had_one() {
    let base = machine(false, Vec::new());
    let m = machine(false, vec![xid(31, &base, 2, Some(514))]);
    let mut f = fault(
        FaultKind::IllegalAddress,
        "cupy_backends.cuda.api.driver.CUDADriverError: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered",
    );
    f.pid = None;
    let a = crate::analysis::fault::alert(&f, FaultKind::IllegalAddress, &m);
    assert!(
        a.title
            .starts_with("an illegal memory access (Xid 31) in the process"),
        "{}",
        a.title
    );
    assert_eq!(
        a.gpu_uuid.as_deref(),
        Some(base.gpus_in_order()[2].sample.uuid.as_str())
    );
    // Two GPUs with Xids at that time: no guess.
    let two = machine(
        false,
        vec![xid(31, &base, 2, Some(514)), xid(31, &base, 0, Some(600))],
    );
    let b = crate::analysis::fault::alert(&f, FaultKind::IllegalAddress, &two);
    assert_eq!(b.confidence.as_deref(), Some("likely"));
}

/// Samples a second apart from `T`: sample 1 carries the job's fault, sample `xid_in` (if any)
/// the Xid the driver reported for it (the event sources join NVML's and the kernel log's
/// reports first: on an H100 it came 2.1 s after the job's error), then the source ends.
/// The alerts raised, oldest first, with the sample each came in (the end counts as `samples`).
fn fault_then_xid(xid_in: Option<u64>, samples: u64) -> Vec<(u64, Alert)> {
    let base = machine(false, Vec::new());
    let g = base.gpus_in_order()[2].sample.clone();
    let mut m = machine(false, Vec::new());
    let mut at = Vec::new();
    for k in 1..samples {
        let mut e = xid(13, &base, 2, Some(4121));
        e.at_ms = T + 800;
        let s = Sample {
            at_ms: T + k * 1000,
            gpus: base
                .gpus_in_order()
                .iter()
                .map(|g| g.sample.clone())
                .collect(),
            processes: vec![build::process(
                4121,
                &g,
                9 * GIB,
                Framework::Cupy,
                "python k.py",
            )],
            failures: if k == 1 {
                vec![fault(
                    FaultKind::MisalignedAddress,
                    "cudaErrorMisalignedAddress: misaligned address",
                )]
            } else {
                Vec::new()
            },
            events: if Some(k) == xid_in {
                vec![e]
            } else {
                Vec::new()
            },
            ..Default::default()
        };
        let before = m.alerts.len();
        apply(&mut m, Event::Sample(s));
        at.extend(std::iter::repeat_n(k, m.alerts.len() - before));
    }
    let before = m.alerts.len();
    apply(&mut m, Event::SourceEnded);
    at.extend(std::iter::repeat_n(samples, m.alerts.len() - before));
    let mut alerts: Vec<Alert> = m.alerts.into_iter().rev().collect();
    alerts.retain(|a| a.level == Level::Failure);
    at.into_iter().zip(alerts).collect()
}

#[test]
fn a_fault_waits_for_its_xid_and_both_alerts_name_each_other() {
    let raised = fault_then_xid(Some(3), 12);
    let got: Vec<(u64, &str)> = raised.iter().map(|(k, a)| (*k, a.class.as_str())).collect();
    assert_eq!(
        got,
        vec![(3, "xid"), (3, "misaligned-address")],
        "{raised:#?}"
    );
    let (xid, fault) = (&raised[0].1, &raised[1].1);
    assert_eq!(fault.confidence.as_deref(), Some("certain"));
    assert!(
        fault.title.contains("(Xid 13) in pid 4121"),
        "{}",
        fault.title
    );
    assert!(
        xid.evidence
            .iter()
            .any(|l| l.starts_with("near it, in a log: a misaligned memory access")),
        "{:?}",
        xid.evidence
    );
}

#[test]
fn a_fault_no_xid_follows_is_raised_once_it_waited_or_when_the_source_ends() {
    // 7 s after the error: sample 8.
    let raised = fault_then_xid(None, 12);
    assert_eq!(raised.len(), 1, "{raised:#?}");
    assert_eq!(raised[0].0, 8);
    assert!(
        raised[0].1.title.contains("no Xid heard"),
        "{}",
        raised[0].1.title
    );
    // A recording that ends first still raises it.
    let raised = fault_then_xid(None, 4);
    assert_eq!(raised.len(), 1, "{raised:#?}");
    assert_eq!(raised[0].0, 4);
}
