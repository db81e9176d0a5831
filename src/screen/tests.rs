//! Tests of the screen's state over one machine.

use super::*;
use crate::sample::ProcessSample;
use crate::sample::{GpuSample, GpuStatus, Reading, Sample};
use crate::source::scripted::build::{GIB, gpu, machine};

#[test]
fn a_lost_gpu_keeps_its_last_known_total() {
    let mut state = State::new(Config::new(1000, 60_000));
    state.update(Event::Started(machine()).into());
    let g = gpu(0, 80 * GIB, 4 * GIB, GIB);
    let sample = |at_ms, g: GpuSample| Sample {
        at_ms,
        gpus: vec![g],
        processes: Vec::new(),
        failures: Vec::new(),
        notices: Vec::new(),
        events: Vec::new(),
        probes: Vec::new(),
    };
    state.update(Msg::from(Event::Sample(sample(1000, g.clone()))));
    let lost = GpuSample {
        status: GpuStatus::Lost {
            reason: "GPU has fallen off the bus".into(),
        },
        memory: Reading::na("GPU is lost"),
        ..g.clone()
    };
    state.update(Msg::from(Event::Sample(sample(2000, lost))));
    let track = state.machine().gpu(&g.uuid).unwrap();
    assert_eq!(track.segments, None);
    assert_eq!(track.total, Some(80 * GIB));
    assert_eq!(track.lost_since_ms, Some(2000));
}
#[test]
fn the_run_filter_keeps_the_command_and_the_writers_of_its_log() {
    use crate::source::scripted::build::process;
    let mut state = State::new(Config::new(1000, 60_000));
    let g = gpu(0, 80 * GIB, 4 * GIB, GIB);
    let log = |p: &mut ProcessSample, r: Reading<Vec<String>>| p.log = r;
    let mut procs: Vec<ProcessSample> = (100..104)
        .map(|pid| {
            process(
                pid,
                &g,
                GIB,
                crate::sample::Framework::Pytorch,
                "python x.py",
            )
        })
        .collect();
    log(&mut procs[0], Reading::na("not a file (stdout is a pipe)"));
    log(&mut procs[1], Reading::Value(vec!["/w/run.log".into()]));
    log(&mut procs[2], Reading::Value(vec!["/w/other.log".into()]));
    log(
        &mut procs[3],
        Reading::na("not readable (permission denied)"),
    );
    state.screen.filter = Some(Filter::Run {
        pid: 100,
        log: "/w/run.log".into(),
    });
    state.update(Msg::from(Event::Sample(Sample {
        at_ms: 1000,
        gpus: vec![g],
        processes: procs,
        failures: Vec::new(),
        notices: Vec::new(),
        events: Vec::new(),
        probes: Vec::new(),
    })));
    let shown: Vec<u32> = state.screen.rows.iter().map(|k| k.pid).collect();
    assert_eq!(shown, vec![100, 101]);
    assert_eq!(state.screen.filter.as_ref().unwrap().label(), "run pid 100");
}

/// The same condition raised twice (again, or by a second source in the same words) is one row
/// of the alerts list, and is not counted as hidden.
#[test]
fn one_condition_is_one_alert_row() {
    let alert = |at_ms| crate::model::Alert {
        at_ms,
        gpu_uuid: None,
        pid: Some(7),
        level: crate::model::Level::Suspected,
        class: "fragmentation-risk".into(),
        confidence: None,
        title: "pid 7 torch pool fragmenting".into(),
        evidence: Vec::new(),
        remedy: None,
        job: None,
    };
    let mut s = State::new(Config::new(1000, 60_000));
    s.machine_mut().add_alerts(vec![alert(1000), alert(2000)]);
    s.derive_rows();
    assert_eq!(s.screen.alert_rows, vec![0]);
    assert_eq!(s.screen.alerts_hidden, None);
}
