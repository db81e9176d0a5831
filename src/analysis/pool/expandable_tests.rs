//! Fragmentation under PyTorch's expandable segments, where `inactive_split_bytes` stays 0: judged
//! from the pool's free part (reserved − allocated) and the largest free block where the probe
//! has one; a pool at its cap whose free part is steady and whose flushes succeed stays silent.

use std::collections::BTreeMap;

use crate::model::{Alert, Config, Event, Machine};
use crate::pipeline;
use crate::sample::{Framework, Pool, Reading, Sample};
use crate::source::scripted::build::{GIB, MIB, gpu, machine, process};

const T0: u64 = 1_763_812_900_000;
const CAP: u64 = 7 * GIB;
const EXPANDABLE: (&str, &str) = ("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True");

fn torch(allocated: u64, reserved: u64, largest: Option<u64>, retries: u64) -> Pool {
    Pool {
        framework: Framework::Pytorch,
        version: None,
        at_ms: T0,
        allocated: Some(allocated),
        reserved: Some(reserved),
        cached_free: Some(reserved - allocated),
        stranded: Some(0),
        largest_free_block: largest,
        largest_alloc: None,
        limit: Some(CAP),
        peak_allocated: Some(allocated + 16 * MIB),
        peak_reserved: None,
        alloc_retries: Some(retries),
        ooms: Some(0),
    }
}

/// One probed job (pid 91) with `env`, one reading a second.
fn run(secs: u64, env: &[(&str, &str)], f: impl Fn(u64) -> Pool) -> Vec<Alert> {
    let mut m = Machine::new(Config::new(1000, 600_000));
    pipeline::apply(&mut m, Event::Started(machine()));
    for k in 0..secs {
        let g = gpu(0, 80 * GIB, 10 * GIB, 0);
        let mut p = process(91, &g, 8 * GIB, Framework::Pytorch, "python3 churn.py");
        p.settings = Reading::Value(
            env.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        );
        p.pool = Reading::Value(f(k));
        let s = Sample {
            at_ms: T0 + k * 1000,
            gpus: vec![g],
            processes: vec![p],
            failures: Vec::new(),
            notices: Vec::new(),
        };
        pipeline::apply(&mut m, Event::Sample(s));
    }
    m.alerts.into_iter().rev().collect()
}

/// The job: every other 8 MiB tensor freed for 30 s under a 7 GiB cap; the pool grows
/// twice as fast as what stays allocated, to 2.8 GiB free between live blocks.
fn churn(k: u64) -> Pool {
    let allocated = GIB / 2 + k * 128 * MIB;
    let reserved = (GIB / 2 + k * 256 * MIB).min(CAP - 64 * MIB);
    torch(allocated.min(reserved), reserved, None, 0)
}

#[test]
fn churn_under_expandable_segments_is_a_fragmentation_that_builds() {
    let alerts = run(30, &[EXPANDABLE], churn);
    let w = alerts
        .iter()
        .find(|a| a.class == "fragmentation-risk")
        .unwrap_or_else(|| panic!("a fragmentation warning: {alerts:?}"));
    assert!(
        w.at_ms <= T0 + 10_000,
        "warned at {} s",
        (w.at_ms - T0) / 1000
    );
    assert!(
        w.title
            .contains("free between its live blocks (expandable segments)"),
        "{}",
        w.title
    );
    assert!(
        w.evidence
            .iter()
            .any(|e| e.contains("counts no inactive split bytes")),
        "{:?}",
        w.evidence
    );
    assert!(
        w.remedy
            .as_deref()
            .unwrap()
            .contains("already has expandable_segments:True"),
        "{:?}",
        w.remedy
    );
    assert!(alerts.iter().all(|a| a.class != "leak"), "{alerts:?}");
    // The same figures without the setting: the stranded bytes say no fragmentation, so it is
    // the climb of allocated memory that is warned.
    let plain = run(30, &[], churn);
    assert!(
        plain.iter().all(|a| a.class != "fragmentation-risk"),
        "{plain:?}"
    );
}

#[test]
fn a_full_pool_whose_free_part_is_in_small_blocks_is_fragmented_under_expandable_segments() {
    // Allocated flat at 4.2 GiB, the pool at its cap with 2.8 GiB free in 8 MiB holes (the
    // probe's memory snapshot), nothing climbing.
    let alerts = run(20, &[EXPANDABLE], |_| {
        torch(4 * GIB + 200 * MIB, CAP - 16 * MIB, Some(8 * MIB), 0)
    });
    assert_eq!(
        alerts.iter().map(|a| a.class.as_str()).collect::<Vec<_>>(),
        vec!["fragmentation-risk"]
    );
    assert!(
        alerts[0]
            .title
            .contains("but its largest free block is 8.00 MiB"),
        "{}",
        alerts[0].title
    );
}

#[test]
fn a_steady_pool_at_its_cap_with_flushes_that_succeed_is_silent_under_expandable_segments() {
    // 5.5 to 6.2 GiB in use under the 7 GiB cap, about 700 MiB free, a flush every 3 s.
    let alerts = run(300, &[EXPANDABLE], |k| {
        let allocated = 5 * GIB + 512 * MIB + (k * 7 % 8) * 90 * MIB;
        torch(allocated, CAP - 100 * MIB, None, k / 3)
    });
    assert!(alerts.is_empty(), "{alerts:?}");
}
