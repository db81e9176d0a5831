//! A rank whose data loader blocks, named live before its peers' watchdog fires (issue 39): its
//! GPU idle while the others spin, and its probe's still main thread or NCCL's RAS counting it
//! behind; and no word where only the GPUs say so (rank 0 writing a checkpoint while the others
//! wait in a barrier looks the same on them).

use crate::analysis::ranks::tests::{Spec, second};
use crate::analysis::test_pools::T0;
use crate::model::{Alert, Config, Event, Machine};
use crate::pipeline;
use crate::sample::{Frame, MainWhere, ProbeNews, Reading, Sample, WhereNews};
use crate::source::scripted::build::{GIB, machine};

const STALL_AT: u64 = 10;

/// NCCL's RAS answer with rank 2 behind the others on AllReduce (as seen on 2 H200s: 274
/// against 290).
fn ras(at_ms: u64) -> crate::sample::RasStatus {
    use crate::sample::{RasComm, RasRank, RasStatus};
    let rank = |r: u32, n: u64| RasRank {
        rank: r,
        host: None,
        pid: Some(1470 + r),
        cuda_dev: Some(r),
        nvml_dev: Some(r),
        status: Vec::new(),
        collectives: std::collections::BTreeMap::from([("AllReduce".to_string(), n)]),
    };
    RasStatus {
        at_ms,
        nccl_version: Some("2.28.9".into()),
        comms: vec![RasComm {
            id: "c6ca3e185233c464".into(),
            size: Some(4),
            ranks: vec![rank(0, 290), rank(1, 290), rank(2, 274), rank(3, 290)],
            missing_ranks: Vec::new(),
            most: Default::default(),
            said: Vec::new(),
        }],
    }
}

/// Four ranks stepping; from `STALL_AT` rank 2's GPU idles and the others' spin at 100 %. With
/// `still`, rank 2's probe says its main thread stands in `next_batch` from then on.
fn run(secs: u64, still: bool) -> Vec<Alert> {
    run_with(secs, still, false)
}

fn run_with(secs: u64, still: bool, with_ras: bool) -> Vec<Alert> {
    let specs: Vec<Spec> = (0..4)
        .map(|r| Spec::new(1470 + r, r, move |_| 6 * GIB))
        .collect();
    let mut m = Machine::new(Config::new(1000, 600_000));
    pipeline::apply(&mut m, Event::Started(machine()));
    for k in 0..secs {
        let (mut gpus, processes) = second(k, 4, 4, &specs);
        for (i, g) in gpus.iter_mut().enumerate() {
            let busy = if k < STALL_AT {
                97
            } else if i == 2 {
                0
            } else {
                100
            };
            g.utilization = Reading::Value(busy);
        }
        let mut probes = Vec::new();
        if still && k == STALL_AT + 10 {
            let frame = |file: &str, line, function: &str| Frame {
                file: file.into(),
                line,
                function: function.into(),
            };
            probes.push(ProbeNews {
                pid: 1472,
                start_time: 1_763_800_000 + 1472,
                answer: None,
                recording: None,
                map: None,
                end: None,
                main_where: Some(WhereNews::At(MainWhere {
                    frames: vec![
                        frame("/usr/lib/python3.12/threading.py", 359, "wait"),
                        frame("/work/train/loader.py", 88, "next_batch"),
                        frame("/work/train/train.py", 140, "main"),
                    ],
                    since_ms: T0 + STALL_AT * 1000,
                    at_ms: T0 + k * 1000,
                    asked: false,
                })),
            });
        }
        let sample = Sample {
            at_ms: T0 + k * 1000,
            gpus,
            processes,
            probes,
            ras: (with_ras && k >= STALL_AT + 5).then(|| ras(T0 + k * 1000)),
            ..Default::default()
        };
        pipeline::apply(&mut m, Event::Sample(sample));
    }
    m.alerts.clone()
}

#[test]
fn a_rank_whose_loader_blocks_is_named_before_any_watchdog() {
    let alerts = run(45, true);
    let stalled: Vec<&Alert> = alerts
        .iter()
        .filter(|a| a.class == super::STALLED)
        .collect();
    assert_eq!(stalled.len(), 1, "{alerts:#?}");
    let a = stalled[0];
    assert_eq!(a.pid, Some(1472));
    assert_eq!(
        a.title,
        "rank 2 (pid 1472) has not reached the collective its job's other ranks wait in: its main thread has been at train/loader.py:88 next_batch for 20s, its GPU idle; rank 0, rank 1, rank 3 wait for it"
    );
    // Said once the GPUs have stood so for 20 s: at 30 s, 15 s before the 45 s mark.
    assert_eq!(a.at_ms, T0 + (STALL_AT + 20) * 1000);
}

#[test]
fn the_gpus_alone_are_not_enough() {
    let alerts = run(45, false);
    assert!(
        alerts.iter().all(|a| a.class != super::STALLED),
        "{alerts:#?}"
    );
}

#[test]
fn nccls_ras_is_the_second_witness_without_the_probe() {
    let alerts = run_with(45, false, true);
    let stalled: Vec<&Alert> = alerts
        .iter()
        .filter(|a| a.class == super::STALLED)
        .collect();
    assert_eq!(stalled.len(), 1, "{alerts:#?}");
    assert!(
        stalled[0]
            .title
            .ends_with(": its GPU idle; rank 0, rank 1, rank 3 wait for it"),
        "{}",
        stalled[0].title
    );
    assert!(
        stalled[0].evidence.iter().any(|e| e
            == "NCCL's RAS: rank 2 of communicator c6ca3e185233c464 has launched 274 AllReduce operations, the others up to 290"),
        "{:#?}",
        stalled[0].evidence
    );
}
