//! NVML's event types and data in gpumon's terms, and the wait: a GPU lost mid-wait said once,
//! retried, then given up; a dropped feed ending it.

use std::collections::VecDeque;

use super::*;
use crate::source::events::EventFeed;

#[test]
fn nvml_event_types_and_data() {
    let xid = event_of(8, 48, Some("GPU-2".into()), 7).unwrap();
    assert_eq!(xid.kind, GpuEventKind::Xid { code: Some(48) });
    assert_eq!((xid.gpu_uuid.as_deref(), xid.at_ms), (Some("GPU-2"), 7));
    assert_eq!(
        event_of(8, 999, None, 7).unwrap().kind,
        GpuEventKind::Xid { code: None },
        "NVML's 999 is an Xid of unknown code"
    );
    assert_eq!(
        event_of(2, 0, None, 7).unwrap().kind,
        GpuEventKind::EccUncorrected
    );
    assert_eq!(
        event_of(1024, 0, None, 7).unwrap().kind,
        GpuEventKind::Remap
    );
    assert_eq!(
        event_of(2048, 0, None, 7).unwrap().kind,
        GpuEventKind::RemapFailure
    );
    assert_eq!(
        event_of(4, 0, None, 7),
        None,
        "a P-state change was not asked for"
    );
}

/// Answers from a script, then fails with `then` forever.
struct Scripted {
    answers: VecDeque<Result<Option<GpuEvent>, NvmlError>>,
    then: fn() -> NvmlError,
    calls: u32,
}

impl Wait for Scripted {
    fn wait(&mut self, _timeout_ms: u32) -> Result<Option<GpuEvent>, NvmlError> {
        self.calls += 1;
        self.answers
            .pop_front()
            .unwrap_or_else(|| Err((self.then)()))
    }
}

#[test]
fn a_gpu_lost_mid_wait_is_said_once_retried_and_given_up() {
    let mut feed = EventFeed::default();
    let sink = feed.sink.clone();
    let e = || event_of(8, 79, Some("GPU-0".into()), 1);
    let mut w = Scripted {
        answers: VecDeque::from([
            Ok(e()),
            Err(NvmlError::GpuLost),
            Err(NvmlError::GpuLost),
            Ok(None),
            Ok(e()),
        ]),
        then: || NvmlError::GpuLost,
        calls: 0,
    };
    listen(&mut w, &sink, Duration::ZERO);
    let (events, notices) = feed.drain();
    assert_eq!(events.len(), 2, "no event lost around the failures");
    assert_eq!(
        notices,
        vec![
            "NVML's event wait failed (GPU fell off the bus); gpumon keeps listening".to_string(),
            format!(
                "GPU events no longer heard: NVML's event wait failed {MAX_FAILURES} times in a row (GPU fell off the bus)"
            ),
        ],
        "said once, then given up"
    );
    assert_eq!(w.calls, 5 + MAX_FAILURES);
}

#[test]
fn a_dropped_feed_ends_the_wait() {
    let feed = EventFeed::default();
    let sink = feed.sink.clone();
    drop(feed);
    let mut w = Scripted {
        answers: VecDeque::new(),
        then: || NvmlError::Timeout,
        calls: 0,
    };
    listen(&mut w, &sink, Duration::ZERO);
    assert_eq!(w.calls, 0);
}
