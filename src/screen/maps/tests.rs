//! Requests from keys: written only for a live, probed, selected process of this machine; the
//! probe's answer said on the status line; an export becomes a command to move it.

use super::*;
use crate::input::Action;
use crate::model::{Config, Event};
use crate::sample::pool_map::ProbeAnswer;
use crate::sample::{Framework, Pool, ProbeNews, Reading, Sample};
use crate::screen::Msg;
use crate::source::scripted::build::{GIB, gpu, machine, process};

const PID: u32 = 4312;

fn pool() -> Pool {
    Pool {
        framework: Framework::Pytorch,
        version: Some("2.11.0".into()),
        at_ms: 0,
        allocated: Some(GIB),
        reserved: Some(2 * GIB),
        cached_free: Some(GIB),
        stranded: None,
        largest_free_block: None,
        largest_alloc: None,
        limit: None,
        peak_allocated: None,
        peak_reserved: None,
        alloc_retries: None,
        ooms: None,
    }
}

fn sample(at_ms: u64, probed: bool, news: Vec<ProbeNews>) -> Msg {
    let g = gpu(0, 80 * GIB, 4 * GIB, GIB);
    let mut p = process(PID, &g, 3 * GIB, Framework::Pytorch, "python train.py");
    if probed {
        p.pool = Reading::Value(pool());
    }
    Msg::from(Event::Sample(Sample {
        at_ms,
        gpus: vec![g],
        processes: vec![p],
        probes: news,
        ..Default::default()
    }))
}

fn answer(id: u64, ok: bool, verb: &str, detail: &str) -> Vec<ProbeNews> {
    vec![ProbeNews {
        pid: PID,
        start_time: 1_763_800_000 + u64::from(PID),
        answer: Some(ProbeAnswer {
            id,
            verb: verb.into(),
            ok,
            detail: detail.into(),
        }),
        recording: None,
        map: None,
        end: None,
        main_where: None,
    }]
}

fn state(probed: bool) -> State {
    let mut s = State::new(Config::new(1000, 60_000));
    s.update(Event::Started(machine()).into());
    s.update(sample(1_000, probed, Vec::new()));
    s.update(Msg::Action(Action::Down));
    s
}

#[test]
fn a_key_asks_the_probe_and_its_answer_reaches_the_status_line() {
    let mut s = state(true);
    let Some(Command::Probe(ask)) = s.update(Msg::Action(Action::AskMap)) else {
        panic!("no request: {:?}", s.screen.status);
    };
    assert_eq!((ask.pid, ask.verb), (PID, Verb::Map));
    assert_eq!(ask.start_time, Some(1_763_800_000 + u64::from(PID)));
    assert_eq!(s.update(sample(2_000, true, Vec::new())), None);
    assert_eq!(s.screen.asks.len(), 1, "still waiting");
    s.update(sample(
        3_000,
        true,
        answer(ask.id, false, "map", "rate limited"),
    ));
    assert_eq!(
        s.screen.status.as_deref(),
        Some("pid 4312's probe refused map: rate limited")
    );
    assert!(s.screen.asks.is_empty());
    // An old answer (another id) is not this request's.
    let Some(Command::Probe(export)) = s.update(Msg::Action(Action::Export)) else {
        panic!()
    };
    assert!(export.id > ask.id);
    s.update(sample(4_000, true, answer(ask.id, true, "map", "")));
    assert_eq!(s.screen.asks.len(), 1);
    let name = "4312.export.1.pickle";
    let cmd = s.update(sample(5_000, true, answer(export.id, true, "export", name)));
    assert_eq!(
        cmd,
        Some(Command::TakeExport {
            pid: PID,
            name: name.into()
        })
    );
}

#[test]
fn requests_that_cannot_be_made_are_answered_on_the_status_line() {
    let mut s = state(false);
    assert_eq!(s.update(Msg::Action(Action::ToggleRecording)), None);
    let said = s.screen.status.clone().unwrap();
    assert!(
        said.starts_with("pid 4312 has no probe: not probed"),
        "{said}"
    );

    let mut s = state(true);
    s.screen.requests_off = Some("a replay's processes are not this machine's".into());
    assert_eq!(s.update(Msg::Action(Action::AskMap)), None);
    assert!(
        s.screen
            .status
            .clone()
            .unwrap()
            .starts_with("requests to probes are off")
    );

    // Exited: the process is no longer listed.
    let mut s = state(true);
    let g = gpu(0, 80 * GIB, 4 * GIB, GIB);
    s.update(Msg::from(Event::Sample(Sample {
        at_ms: 2_000,
        gpus: vec![g],
        ..Default::default()
    })));
    assert_eq!(s.update(Msg::Action(Action::Export)), None);
    assert_eq!(s.screen.status.as_deref(), Some("pid 4312 has exited"));
}

#[test]
fn a_request_that_fails_or_is_never_answered_stops_waiting() {
    let mut s = state(true);
    let Some(Command::Probe(ask)) = s.update(Msg::Action(Action::ToggleRecording)) else {
        panic!()
    };
    assert_eq!(ask.verb, Verb::RecordOn);
    s.update(Msg::AskFailed(ask.id, "pid 4312 has exited".into()));
    assert!(s.screen.asks.is_empty());
    assert_eq!(s.screen.status.as_deref(), Some("pid 4312 has exited"));
    s.update(Msg::Action(Action::AskMap));
    s.update(sample(1_000 + ANSWER_WAIT_MS + 1_000, true, Vec::new()));
    assert_eq!(
        s.screen.status.as_deref(),
        Some("pid 4312's probe did not answer map within 60 s")
    );
    assert!(s.screen.asks.is_empty());
}
