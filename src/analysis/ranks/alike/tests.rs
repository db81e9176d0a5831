//! Every rank of a job climbing alike (issue 39: a Lightning job whose module keeps a slice of
//! every step's logits on every rank), through the pipeline on scripted jobs with real sampling
//! noise: one job alert, no leak alert a rank, no "raise the limit" while the leak is known; and
//! silence where ranks grow together only for a while (a warm-up, caches filling).

use crate::analysis::ranks::tests::{CAP, JOB, OUTSIDE, Spec, leaking, none, of, run, warnings};
use crate::source::scripted::build::{GIB, MIB};

fn alike(world: u32, rate: impl Fn(u32) -> u64) -> Vec<crate::model::Alert> {
    let pool = 4 * GIB;
    let specs: Vec<Spec> = (0..world)
        .map(|r| Spec::new(1400 + r, r, leaking(pool, 10, rate(r))))
        .collect();
    // 40 s of climbing towards the 14 GiB cap (the ranks' floors keep their rate to the end).
    let _ = (CAP, OUTSIDE, JOB);
    run(55, world, world, &specs, &none).1
}

#[test]
fn four_ranks_climbing_alike_are_one_alert_for_the_job() {
    let alerts = alike(4, |r| (150 + u64::from(r) * 10) * MIB);
    let job = of(&alerts, super::GROW_ALIKE);
    assert_eq!(job.len(), 1, "{alerts:#?}");
    let a = job[0];
    assert!(
        a.title.starts_with("all 4 ranks grow +")
            && a.title
                .contains("alike: code every rank runs keeps memory from step to step"),
        "{}",
        a.title
    );
    assert_eq!(
        a.evidence.iter().filter(|e| e.contains(" keeps +")).count(),
        4,
        "{a:#?}"
    );
    assert!(of(&alerts, "leak").is_empty(), "{alerts:#?}");
    assert!(
        of(&alerts, super::super::GROWS_ALONE).is_empty(),
        "{alerts:#?}"
    );
    assert!(of(&alerts, "pool-near-limit").is_empty(), "{alerts:#?}");
}

#[test]
fn ranks_climbing_at_rates_far_apart_are_not_alike() {
    let alerts = alike(2, |r| if r == 0 { 300 * MIB } else { 60 * MIB });
    assert!(of(&alerts, super::GROW_ALIKE).is_empty(), "{alerts:#?}");
    assert!(
        !warnings(&alerts).is_empty(),
        "each rank's own rule still speaks: {alerts:#?}"
    );
}
