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
        ..Default::default()
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
        ..Default::default()
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

/// Samples of one process on GPU 0 at each of `at`, the last `exit` of them without it.
fn one_process(at: &[u64], exit: usize) -> Vec<Sample> {
    use crate::source::scripted::build::process;
    let g = gpu(0, 80 * GIB, 4 * GIB, GIB);
    let p = process(7, &g, GIB, crate::sample::Framework::Pytorch, "python x.py");
    at.iter()
        .enumerate()
        .map(|(i, &at_ms)| Sample {
            at_ms,
            gpus: vec![g.clone()],
            processes: if i + exit < at.len() {
                vec![p.clone()]
            } else {
                Vec::new()
            },
            ..Default::default()
        })
        .collect()
}

#[test]
fn a_paused_screen_keeps_every_age_and_catches_up_when_it_resumes() {
    let mut state = State::new(Config::new(1000, 60_000));
    state.update(Event::Started(machine()).into());
    let samples = one_process(&[1000, 2000, 3000, 4000, 5000, 6000], 4);
    for s in samples[..3].iter().cloned() {
        state.update(Event::Sample(s).into());
    }
    let exited = |s: &State| s.machine().processes.values().next().unwrap().exited_ms;
    assert_eq!(exited(&state), Some(3000));
    state.update(Msg::Action(Action::TogglePause));
    for s in samples[3..].iter().cloned() {
        state.update(Event::Sample(s).into());
    }
    state.update(Event::Clock(9000).into());
    state.update(
        Event::SourceFailed {
            at_ms: 9500,
            reason: "NVML: GPU is lost".into(),
        }
        .into(),
    );
    // The view's clock stays where it stopped: "exited 0s ago" stays so.
    assert_eq!(state.machine().now_ms, 3000);
    assert_eq!(state.machine().latest_ms(), 9500);
    assert!(matches!(
        state.machine().source,
        crate::model::SourceState::Failing { since_ms: 9500, .. }
    ));
    state.update(Msg::Action(Action::TogglePause));
    assert_eq!(state.machine().now_ms, 9500, "resumed: time caught up");
}

#[test]
fn a_new_lap_starts_clean_and_a_paused_screen_waits_for_it() {
    let mut state = State::new(Config::new(1000, 60_000));
    state.update(Event::Started(machine()).into());
    for s in one_process(&[1000, 2000, 3000], 1) {
        state.update(Event::Sample(s).into());
    }
    assert_eq!(state.machine().processes.len(), 1, "an exited row");
    state.update(Msg::Action(Action::TogglePause));
    state.update(Event::Lap(2).into());
    for s in one_process(&[5000], 0) {
        state.update(Event::Sample(s).into());
    }
    assert_eq!(state.machine().lap, 1, "a paused screen keeps its lap");
    assert!(
        state
            .machine()
            .processes
            .values()
            .all(|t| t.exited_ms.is_some())
    );
    state.update(Msg::Action(Action::TogglePause));
    assert_eq!(state.machine().lap, 2);
    assert!(state.machine().processes.is_empty(), "nothing of lap 1");
    assert!(state.machine().info.is_some(), "what the machine is stays");
    for s in one_process(&[6000], 0) {
        state.update(Event::Sample(s).into());
    }
    let t = state.machine().processes.values().next().unwrap();
    assert_eq!((t.first_seen_ms, t.exited_ms), (6000, None));
}
