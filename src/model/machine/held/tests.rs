//! The RAS answer the machine keeps: the latest, through a pause too.

use crate::model::{Config, Machine};
use crate::sample::{RasStatus, Sample};

fn sample(at_ms: u64, ras_at: Option<u64>) -> Sample {
    Sample {
        at_ms,
        gpus: Vec::new(),
        ras: ras_at.map(|at_ms| RasStatus {
            at_ms,
            nccl_version: Some("2.28.9".into()),
            comms: Vec::new(),
        }),
        ..Default::default()
    }
}

fn ras_at(m: &Machine) -> Option<u64> {
    m.ras.as_ref().map(|r| r.at_ms)
}

#[test]
fn the_latest_answer_is_kept_until_a_sample_brings_another() {
    let mut m = Machine::new(Config::new(1_000, 60_000));
    m.ingest(sample(1_000, None));
    assert_eq!(ras_at(&m), None);
    m.ingest(sample(2_000, Some(1_900)));
    m.ingest(sample(3_000, None));
    assert_eq!(ras_at(&m), Some(1_900));
    m.ingest(sample(4_000, Some(3_950)));
    assert_eq!(ras_at(&m), Some(3_950));
}

#[test]
fn an_answer_that_came_during_a_pause_is_taken_in_on_resume() {
    let mut m = Machine::new(Config::new(1_000, 60_000));
    m.ingest(sample(1_000, Some(900)));
    m.hold(sample(2_000, Some(1_900)));
    m.hold(sample(3_000, None));
    assert_eq!(
        ras_at(&m),
        Some(900),
        "a paused screen keeps what it showed"
    );
    m.resume();
    let mut next = sample(4_000, None);
    m.unhold(&mut next);
    m.ingest(next);
    assert_eq!(ras_at(&m), Some(1_900));
    // A newer answer in the sample itself wins over the held one.
    m.hold(sample(5_000, Some(4_900)));
    let mut next = sample(6_000, Some(5_900));
    m.unhold(&mut next);
    m.ingest(next);
    assert_eq!(ras_at(&m), Some(5_900));
    assert!(m.held.ras.is_none());
}
