//! The event feed: scripted sources on their own threads, a storm capped and counted, a dropped
//! feed stopping its source, NVML's and the kernel's reports of one Xid merged.

use std::time::{Duration, Instant};

use super::*;

fn xid(at_ms: u64, code: u64, origin: EventOrigin) -> GpuEvent {
    GpuEvent {
        at_ms,
        gpu_uuid: (origin == EventOrigin::Nvml).then(|| "GPU-2".to_string()),
        pci: (origin == EventOrigin::Kernel).then(|| "0000:1b:00".to_string()),
        kind: GpuEventKind::Xid { code: Some(code) },
        pid: (origin == EventOrigin::Kernel).then_some(4121),
        process: (origin == EventOrigin::Kernel).then(|| "python".to_string()),
        origin,
        detail: None,
    }
}

/// Drains `feed` until `n` reports arrived or a second passed.
fn drain_until(feed: &mut EventFeed, n: usize) -> (Vec<GpuEvent>, Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let (mut events, mut notices) = (Vec::new(), Vec::new());
    while events.len() + notices.len() < n && Instant::now() < deadline {
        let (e, m) = feed.drain();
        events.extend(e);
        notices.extend(m);
        std::thread::sleep(Duration::from_millis(5));
    }
    (events, notices)
}

#[test]
fn a_scripted_source_reports_through_its_own_thread() {
    let mut feed = EventFeed::default();
    feed.listen(Box::new(ScriptedEvents(vec![
        Report::Notice("Xid events not heard on GPU1: no permission".into()),
        Report::Event(xid(1_000, 48, EventOrigin::Nvml)),
    ])));
    let (events, notices) = drain_until(&mut feed, 2);
    assert_eq!(events, vec![xid(1_000, 48, EventOrigin::Nvml)]);
    assert_eq!(notices.len(), 1);
}

#[test]
fn a_storm_is_capped_and_counted_and_a_dropped_feed_stops_the_source() {
    let mut feed = EventFeed::default();
    let storm = (0..CAPACITY as u64 + 10)
        .map(|i| Report::Event(xid(i, 92, EventOrigin::Nvml)))
        .collect();
    let sink = feed.sink.clone();
    Box::new(ScriptedEvents(storm)).run(&sink);
    let (events, notices) = feed.drain();
    assert_eq!(events.len(), CAPACITY);
    assert_eq!(
        notices,
        vec![format!(
            "10 GPU events dropped: more than {CAPACITY} arrived within one tick"
        )]
    );
    drop(feed);
    assert!(sink.stopped());
    assert!(!sink.send(Report::Notice("late".into())));
}

#[test]
fn nvml_and_kernel_reports_of_one_xid_are_one_event() {
    let gpus = [
        ("GPU-1", Some("00000000:1A:00.0")),
        ("GPU-2", Some("00000000:1B:00.0")),
    ];
    let merged = merge(
        vec![
            xid(10_000, 48, EventOrigin::Nvml),
            xid(10_900, 48, EventOrigin::Kernel),
        ],
        &gpus,
    );
    assert_eq!(merged.len(), 1);
    let e = &merged[0];
    assert_eq!(
        (e.at_ms, e.pid, e.origin),
        (10_000, Some(4121), EventOrigin::Nvml)
    );
    assert_eq!(e.gpu_uuid.as_deref(), Some("GPU-2"));
    // Another code, or the same code much later, is another event.
    let two = merge(
        vec![
            xid(10_000, 48, EventOrigin::Nvml),
            xid(10_000 + SAME_XID_MS + 1, 48, EventOrigin::Kernel),
            xid(10_100, 63, EventOrigin::Kernel),
        ],
        &gpus,
    );
    assert_eq!(two.len(), 3);
}

#[test]
fn an_xid_for_a_gpu_no_longer_listed_keeps_its_pci_address() {
    let merged = merge(vec![xid(1, 79, EventOrigin::Kernel)], &[("GPU-1", None)]);
    assert_eq!(merged[0].gpu_uuid, None);
    assert_eq!(merged[0].pci.as_deref(), Some("0000:1b:00"));
}
