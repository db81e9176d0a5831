//! GPU events through the real live source: NVML's and the kernel's reports of one Xid become one
//! event, an Xid for a GPU no longer listed still arrives, a refused registration is a notice,
//! and no sample is lost while events come and go.

use std::time::{Duration, Instant};

use gpumon::sample::GpuEvent;
use gpumon::sample::health::{EventOrigin, GpuEventKind};
use gpumon::source::events::{EventFeed, Report, ScriptedEvents};
use gpumon::source::scripted::build::{self, GIB};
use gpumon::source::{GpuReadout, Sample, Source};

use super::{all_found, listed, live};

fn xid(at_ms: u64, code: u64, origin: EventOrigin, pci: &str) -> GpuEvent {
    GpuEvent {
        at_ms,
        gpu_uuid: None,
        pci: Some(pci.into()),
        kind: GpuEventKind::Xid { code: Some(code) },
        pid: Some(4121),
        process: Some("python".into()),
        origin,
        detail: Some("channel 0x0000000a".into()),
    }
}

/// Samples until `want` events and notices came out (the feed's thread runs beside), at most 5 s.
fn sample_until(source: &mut impl Source, want: usize) -> Vec<Sample> {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut samples = Vec::new();
    while Instant::now() < deadline {
        samples.push(source.sample().expect("no sample lost"));
        let got: usize = samples
            .iter()
            .map(|s| s.events.len() + s.notices.len())
            .sum();
        if got >= want {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    samples
}

#[test]
fn one_xid_from_nvml_and_the_kernel_is_one_event_and_an_unlisted_gpu_is_kept() {
    let g0 = build::gpu(0, 80 * GIB, 10 * GIB, GIB);
    let gpus = vec![g0.clone()];
    let mut nvml = xid(0, 48, EventOrigin::Nvml, "");
    nvml.gpu_uuid = Some(g0.uuid.clone());
    nvml.pci = None;
    nvml.pid = None;
    nvml.process = None;
    nvml.detail = None;
    let now = gpumon::clock::unix_ms();
    nvml.at_ms = now - 10_000;
    // build::gpu(0) sits at 00000000:19:00.0; 0000:3b:00 is no GPU NVML lists.
    let kernel = xid(now - 9_500, 48, EventOrigin::Kernel, "0000:19:00");
    let stray = xid(now - 9_000, 79, EventOrigin::Kernel, "0000:3b:00");
    let feed = EventFeed::default();
    feed.listen(Box::new(ScriptedEvents(vec![
        Report::Event(nvml),
        Report::Notice("Xid and ECC events not heard on some GPUs: GPU1: no permission".into()),
        Report::Event(kernel),
        Report::Event(stray),
    ])));
    let g = g0.clone();
    let mut source = live(
        move |_| {
            Ok(GpuReadout {
                gpus: gpus.clone(),
                processes: vec![listed(4121, &g, GIB)],
            })
        },
        all_found,
    )
    .with_events(feed);
    let samples = sample_until(&mut source, 3);
    assert!(
        samples
            .iter()
            .all(|s| s.gpus.len() == 1 && s.processes.len() == 1)
    );
    let events: Vec<&GpuEvent> = samples.iter().flat_map(|s| &s.events).collect();
    assert_eq!(events.len(), 2, "{events:?}");
    let ecc = events.iter().find(|e| e.xid() == Some(48)).unwrap();
    assert_eq!(ecc.gpu_uuid.as_deref(), Some(g0.uuid.as_str()));
    assert_eq!((ecc.pid, ecc.origin), (Some(4121), EventOrigin::Nvml));
    let lost = events.iter().find(|e| e.xid() == Some(79)).unwrap();
    assert_eq!(lost.gpu_uuid, None);
    let notices: Vec<&String> = samples.iter().flat_map(|s| &s.notices).collect();
    assert_eq!(notices.len(), 1, "said once");
}
