//! GPU events (Xid errors, ECC and remap events) heard off the reactor: each `EventSource` runs on
//! its own thread (a blocking NVML event wait, a non-blocking read of the kernel log) and hands
//! what it hears to an `EventFeed`, which the live source drains once a tick. A source that cannot
//! listen says why once, as a notice; a scripted source stands beside the real ones for tests.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};

use crate::sample::GpuEvent;
use crate::sample::health::{EventOrigin, GpuEventKind};

/// Events and notices a feed holds before the live source drains it; more are dropped and
/// counted (a storm of corrected-ECC events must not grow memory).
pub const CAPACITY: usize = 256;
/// Two reports of one Xid on one GPU this close together are the same Xid (NVML's event and the
/// kernel's line of it).
pub const SAME_XID_MS: u64 = 5_000;

/// What a source hands over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    Event(GpuEvent),
    /// Said once: why the source cannot listen (registration refused, the kernel log not
    /// readable), or stopped listening (the GPU was lost mid-wait).
    Notice(String),
}

/// Where a source's thread sends its reports; it tells the source when nobody listens any more.
#[derive(Clone)]
pub struct Sink {
    tx: SyncSender<Report>,
    stop: Arc<AtomicBool>,
    dropped: Arc<std::sync::atomic::AtomicU64>,
}

impl Sink {
    /// Hands a report over; false once the feed is gone (the source should return).
    pub fn send(&self, report: Report) -> bool {
        match self.tx.try_send(report) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                !self.stopped()
            }
            Err(TrySendError::Disconnected(_)) => false,
        }
    }

    /// Whether the feed is gone.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Something that listens for GPU events, blocking, on a thread of its own.
pub trait EventSource: Send + 'static {
    /// Its thread's name.
    fn name(&self) -> &'static str;
    /// Listens until `sink.send` returns false or `sink.stopped()`, or it cannot go on (it says
    /// why with a `Report::Notice` first). Waits in steps of at most a second, so it notices soon
    /// that the feed is gone.
    fn run(self: Box<Self>, sink: &Sink);
}

/// The receiving end of one or more sources' threads; dropping it stops them.
pub struct EventFeed {
    rx: Receiver<Report>,
    pub(crate) sink: Sink,
}

impl Default for EventFeed {
    fn default() -> Self {
        let (tx, rx) = sync_channel(CAPACITY);
        EventFeed {
            rx,
            sink: Sink {
                tx,
                stop: Arc::new(AtomicBool::new(false)),
                dropped: Arc::default(),
            },
        }
    }
}

impl EventFeed {
    /// Starts `source` on its own thread; a thread that cannot be started is a notice.
    pub fn listen(&self, source: Box<dyn EventSource>) {
        let sink = self.sink.clone();
        let name = source.name();
        let started = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || source.run(&sink));
        if let Err(e) = started {
            self.sink.send(Report::Notice(format!(
                "{name}: could not start a thread: {e}"
            )));
        }
    }

    /// What arrived since the last drain (never blocks): events, and notices to say once.
    pub fn drain(&mut self) -> (Vec<GpuEvent>, Vec<String>) {
        let (mut events, mut notices) = (Vec::new(), Vec::new());
        while let Ok(r) = self.rx.try_recv() {
            match r {
                Report::Event(e) => events.push(e),
                Report::Notice(n) => notices.push(n),
            }
        }
        let dropped = self.sink.dropped.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            notices.push(format!(
                "{dropped} GPU events dropped: more than {CAPACITY} arrived within one tick"
            ));
        }
        (events, notices)
    }
}

impl Drop for EventFeed {
    fn drop(&mut self) {
        self.sink.stop.store(true, Ordering::Relaxed);
    }
}

/// Joins the reports of one Xid that came both from NVML and from the kernel log (same GPU, same
/// code, within `SAME_XID_MS`): one event, NVML's time, the kernel line's pid, name and detail.
/// `gpus` (UUID, PCI bus id) names the GPU of a kernel line by its PCI address.
pub fn merge(mut events: Vec<GpuEvent>, gpus: &[(&str, Option<&str>)]) -> Vec<GpuEvent> {
    for e in &mut events {
        if e.gpu_uuid.is_none()
            && let Some(pci) = &e.pci
        {
            e.gpu_uuid = gpus
                .iter()
                .find(|(_, bus)| bus.is_some_and(|b| crate::oom::xid::same_pci(pci, b)))
                .map(|(uuid, _)| uuid.to_string());
        }
    }
    let mut out: Vec<GpuEvent> = Vec::with_capacity(events.len());
    for e in events {
        let twin = out.iter_mut().find(|o| {
            o.origin != e.origin
                && matches!(o.kind, GpuEventKind::Xid { .. })
                && o.kind == e.kind
                && o.gpu_uuid.is_some()
                && o.gpu_uuid == e.gpu_uuid
                && o.at_ms.abs_diff(e.at_ms) <= SAME_XID_MS
        });
        match twin {
            Some(o) => {
                let (nvml, kernel) = if o.origin == EventOrigin::Nvml {
                    (o.at_ms, e.clone())
                } else {
                    (e.at_ms, o.clone())
                };
                o.at_ms = nvml;
                o.origin = EventOrigin::Nvml;
                o.pid = o.pid.or(kernel.pid);
                o.process = o.process.take().or(kernel.process);
                o.detail = o.detail.take().or(kernel.detail);
                o.pci = o.pci.take().or(kernel.pci);
            }
            None => out.push(e),
        }
    }
    out
}

/// A scripted source for tests: sends its reports, then returns.
pub struct ScriptedEvents(pub Vec<Report>);

impl EventSource for ScriptedEvents {
    fn name(&self) -> &'static str {
        "gpumon-events-scripted"
    }

    fn run(self: Box<Self>, sink: &Sink) {
        for r in self.0 {
            if !sink.send(r) {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests;
