//! The demo's second loop against its first (issue 41): every time in a new lap is shifted by the
//! same whole seconds (samples, failures, a process's start, its pool reading, the block maps),
//! so the second lap raises the same alerts with the same evidence ("held by
//! gpu/torch_frag.py:67" included), later by the lap's length, and nothing in it is older than
//! the lap.

use gpumon::model::{Alert, Config, Event, Level, Machine};
use gpumon::pipeline;
use gpumon::sample::Reading;
use gpumon::source::replay::ReplaySource;
use gpumon::source::{Source, SourceError};

/// What one lap left: its alerts (oldest first), each process's (pid, start time, first seen,
/// pool read at), and the block maps' times.
struct Lap {
    first_ms: u64,
    alerts: Vec<Alert>,
    processes: Vec<(u32, u64, u64, Option<u64>)>,
    maps: Vec<u64>,
}

fn lap_of(machine: &Machine, first_ms: u64) -> Lap {
    let mut alerts = machine.alerts.clone();
    alerts.reverse();
    let mut processes: Vec<_> = machine
        .processes
        .values()
        .map(|t| {
            let start = match t.sample.start_time {
                Reading::Value(s) => s,
                _ => 0,
            };
            let pool = match &t.sample.pool {
                Reading::Value(p) => Some(p.at_ms),
                _ => None,
            };
            (t.key.pid, start, t.first_seen_ms, pool)
        })
        .collect();
    processes.sort();
    let mut maps: Vec<u64> = machine
        .maps
        .values()
        .flat_map(|m| {
            m.map
                .iter()
                .map(|m| m.at_ms)
                .chain(m.at_oom.iter().map(|o| o.at_ms))
        })
        .collect();
    maps.sort();
    Lap {
        first_ms,
        alerts,
        processes,
        maps,
    }
}

/// The demo played through the pipeline for two laps, as the screen's sampler feeds it.
fn two_laps() -> (Lap, Lap) {
    let mut demo = ReplaySource::demo().unwrap();
    let mut machine = Machine::new(Config::new(1000, 600_000));
    pipeline::apply(&mut machine, Event::Started(demo.machine().unwrap()));
    let mut laps = Vec::new();
    let mut first_ms = None;
    while laps.len() < 2 {
        match demo.sample() {
            Ok(s) => {
                first_ms.get_or_insert(s.at_ms);
                pipeline::apply(&mut machine, Event::Sample(s));
            }
            Err(SourceError::Lapped(n)) => {
                laps.push(lap_of(&machine, first_ms.take().unwrap()));
                if laps.len() == 2 {
                    break;
                }
                pipeline::apply(&mut machine, Event::Lap(n));
            }
            Err(e) => panic!("{e}"),
        }
    }
    let second = laps.pop().unwrap();
    (laps.pop().unwrap(), second)
}

#[test]
fn the_second_lap_is_the_first_later_by_whole_seconds() {
    let (one, two) = two_laps();
    let by = two.first_ms - one.first_ms;
    assert_eq!(by % 1000, 0, "{by}");
    assert!(!one.alerts.is_empty());
    let words = |a: &Alert| (a.class.clone(), a.pid, a.level, a.evidence.len());
    assert_eq!(
        one.alerts.iter().map(words).collect::<Vec<_>>(),
        two.alerts.iter().map(words).collect::<Vec<_>>(),
        "the same alerts, with as many lines of evidence"
    );
    for (a, b) in one.alerts.iter().zip(&two.alerts) {
        assert_eq!(b.at_ms, a.at_ms + by, "{}", a.class);
        assert_eq!(b.title, a.title, "{}", a.class);
        assert_eq!(b.evidence, a.evidence, "{}", a.class);
    }
    let held = |lap: &Lap| {
        lap.alerts
            .iter()
            .filter(|a| a.level == Level::Failure)
            .filter(|a| {
                a.evidence
                    .iter()
                    .any(|e| e.contains("; held by gpu/torch_frag.py:"))
            })
            .count()
    };
    assert_eq!(
        held(&one),
        2,
        "both OOM alerts name the site in the first lap"
    );
    assert_eq!(held(&two), 2, "and in the second");
    let shifted: Vec<_> = one
        .processes
        .iter()
        .map(|(pid, start, seen, pool)| (*pid, start + by / 1000, seen + by, pool.map(|p| p + by)))
        .collect();
    assert_eq!(
        two.processes, shifted,
        "starts, first seen and pool readings"
    );
    for (_, _, seen, pool) in &two.processes {
        assert!(
            pool.is_none_or(|p| p >= *seen),
            "pool read before first seen"
        );
    }
    assert_eq!(
        two.maps,
        one.maps.iter().map(|m| m + by).collect::<Vec<_>>(),
        "the block maps' times"
    );
    assert!(two.maps.iter().all(|m| *m >= two.first_ms));
}
