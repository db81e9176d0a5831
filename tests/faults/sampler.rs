//! Sampler faults, in paused tokio time: NVML gone after start (banner, back-off, recovery), a
//! slow NVML call (ticks skipped, keys still answered), a panic in the source.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc as std_mpsc};
use std::time::Duration;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use gpumon::app::{self, Exit};
use gpumon::model::{Event as HostEvent, SourceState};
use gpumon::record::{self, RecordError};
use gpumon::sampler::{self, Factory};
use gpumon::screen::Msg;
use gpumon::source::scripted::build::{self, GIB};
use gpumon::source::{GpuReadout, MachineInfo, Sample, Source, SourceError};
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

use super::{all_found, listed, live, screen, state};

const DOWN: &str = "NVML stopped answering: NVIDIA driver not loaded";

/// One GPU with one process, through the real live source; fails for good once `up` is false
/// (as an NVML session does after a driver reload: only a new session can recover).
fn session(up: Arc<AtomicBool>) -> Box<dyn Source> {
    let g = build::gpu(0, 80 * GIB, 10 * GIB, GIB);
    let mut dead = false;
    Box::new(live(
        move |_| {
            dead |= !up.load(Ordering::SeqCst);
            if dead {
                return Err(SourceError::Unavailable(DOWN.into()));
            }
            Ok(GpuReadout {
                processes: vec![listed(7, &g, GIB)],
                gpus: vec![g.clone()],
            })
        },
        all_found,
    ))
}

#[tokio::test(start_paused = true)]
async fn nvml_gone_after_start_shows_a_banner_backs_off_and_recovers() {
    let up = Arc::new(AtomicBool::new(true));
    let sessions = Arc::new(AtomicUsize::new(0));
    let factory: Factory = {
        let (up, sessions) = (Arc::clone(&up), Arc::clone(&sessions));
        Arc::new(move || {
            sessions.fetch_add(1, Ordering::SeqCst);
            if up.load(Ordering::SeqCst) {
                Ok(session(Arc::clone(&up)))
            } else {
                Err(SourceError::Unavailable("NVIDIA driver not loaded".into()))
            }
        })
    };
    let (tx, mut rx) = mpsc::channel(16);
    let task = sampler::spawn(factory, Duration::from_secs(1), tx);
    let mut st = state();
    for _ in 0..3 {
        st.update(rx.recv().await.unwrap());
    }
    assert_eq!(st.machine().source, SourceState::Running);
    assert!(st.machine().last_sample_ms.is_some());

    up.store(false, Ordering::SeqCst);
    let mut failed_at = Vec::new();
    while failed_at.len() < 6 {
        let msg = rx.recv().await.unwrap();
        assert!(
            matches!(&msg, Msg::Host(_, HostEvent::SourceFailed { reason, .. }) if reason == DOWN)
        );
        failed_at.push(Instant::now());
        st.update(msg);
        assert!(screen(&st).contains("source failing since"), "the banner");
        assert!(screen(&st).contains(DOWN));
    }
    let gaps: Vec<u64> = failed_at
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs())
        .collect();
    // interval·2^n of back-off, then one interval to the next tick; at most 30 s of back-off.
    assert_eq!(gaps, [3, 5, 9, 17, 31], "retries back off");
    assert_eq!(
        sessions.load(Ordering::SeqCst),
        2,
        "a new NVML session is tried after 3 failures (and again after 6)"
    );

    up.store(true, Ordering::SeqCst);
    let before = Instant::now();
    let msg = loop {
        match rx.recv().await.unwrap() {
            Msg::Host(_, HostEvent::Sample(s)) => break Msg::from(HostEvent::Sample(s)),
            other => {
                st.update(other);
            }
        }
    };
    assert!(
        before.elapsed() <= Duration::from_secs(3 * 31),
        "recovers within a rebuild"
    );
    st.update(msg);
    assert_eq!(st.machine().source, SourceState::Running);
    assert!(!screen(&st).contains("source failing"), "the banner goes");
    assert_eq!(st.screen.rows.len(), 1);
    task.abort();
}

/// A source whose `gated`-th sample blocks until the test releases it (a slow NVML call).
struct Slow {
    calls: Arc<AtomicUsize>,
    gated: usize,
    entered: Arc<Notify>,
    gate: Mutex<std_mpsc::Receiver<()>>,
}

impl Source for Slow {
    fn machine(&mut self) -> Result<MachineInfo, SourceError> {
        Ok(build::machine())
    }

    fn sample(&mut self) -> Result<Sample, SourceError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if n == self.gated {
            self.entered.notify_one();
            let _ = self.gate.lock().unwrap().recv();
        }
        Ok(Sample {
            at_ms: n as u64,
            gpus: vec![build::gpu(0, 80 * GIB, 10 * GIB, GIB)],
            ..Default::default()
        })
    }
}

struct SlowHandles {
    calls: Arc<AtomicUsize>,
    entered: Arc<Notify>,
    release: std_mpsc::Sender<()>,
}

fn slow(gated: usize) -> (Factory, SlowHandles) {
    let (release, gate) = std_mpsc::channel();
    let h = SlowHandles {
        calls: Arc::new(AtomicUsize::new(0)),
        entered: Arc::new(Notify::new()),
        release,
    };
    let source = Mutex::new(Some(Slow {
        calls: Arc::clone(&h.calls),
        gated,
        entered: Arc::clone(&h.entered),
        gate: Mutex::new(gate),
    }));
    let factory: Factory = Arc::new(move || {
        let s = source.lock().unwrap().take().expect("built once");
        Ok(Box::new(s) as Box<dyn Source>)
    });
    (factory, h)
}

#[tokio::test(start_paused = true)]
async fn a_slow_nvml_call_skips_ticks_instead_of_queueing_them() {
    let (factory, h) = slow(1);
    let (tx, mut rx) = mpsc::channel(64);
    let task = sampler::spawn(factory, Duration::from_secs(1), tx);
    assert!(matches!(
        rx.recv().await,
        Some(Msg::Host(_, HostEvent::Started(_)))
    ));
    assert!(matches!(rx.recv().await, Some(Msg::Host(_, HostEvent::Sample(s))) if s.at_ms == 0));
    h.entered.notified().await;
    // Ten seconds pass while NVML answers (no persistence mode): ten ticks are missed.
    tokio::time::advance(Duration::from_secs(10)).await;
    h.release.send(()).unwrap();
    assert!(matches!(rx.recv().await, Some(Msg::Host(_, HostEvent::Sample(s))) if s.at_ms == 1));
    let released = Instant::now();
    let mut after = Vec::new();
    while let Ok(Some(Msg::Host(_, HostEvent::Sample(_)))) =
        tokio::time::timeout_at(released + Duration::from_millis(3500), rx.recv()).await
    {
        after.push((Instant::now() - released).as_millis());
    }
    // At most one catch-up tick at once, then one a second: not the ten missed ones in a burst.
    assert!(after.len() <= 4, "{after:?}");
    assert!(
        after.iter().filter(|&&ms| ms < 500).count() <= 1,
        "{after:?}"
    );
    assert!(h.calls.load(Ordering::SeqCst) <= 6);
    task.abort();
}

fn key(c: char) -> std::io::Result<Event> {
    Ok(Event::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::NONE,
    )))
}

#[tokio::test(start_paused = true)]
async fn keys_are_answered_while_the_sampler_is_stuck_in_a_slow_call() {
    let (factory, h) = slow(0);
    let (tx, rx) = mpsc::channel(16);
    let task = sampler::spawn(factory, Duration::from_secs(1), tx);
    let (key_tx, key_rx) = mpsc::channel(4);
    let keys = Box::pin(futures_util::stream::unfold(key_rx, |mut r| async move {
        r.recv().await.map(|e| (e, r))
    }));
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 40)).unwrap();
    let mut st = state();
    let dir = tempfile::tempdir().unwrap();
    let options = app::Options {
        snapshot_dir: dir.path().to_path_buf(),
        live_clock: true,
        stop_run: None,
        start_times: None,
        mouse: false,
        opened: None,
        requests: None,
    };
    let user = async {
        h.entered.notified().await;
        tokio::time::advance(Duration::from_secs(10)).await;
        key_tx.send(key('p')).await.unwrap();
        key_tx.send(key('q')).await.unwrap();
    };
    let (exit, ()) = tokio::join!(
        app::run(
            &mut term,
            &mut st,
            rx,
            keys,
            std::future::pending(),
            options
        ),
        user
    );
    assert_eq!(exit.unwrap(), Exit::Quit, "q answered");
    assert!(st.screen.paused, "p answered");
    assert_eq!(
        st.machine().last_sample_ms,
        None,
        "while the first sample was still being taken"
    );
    assert_eq!(
        h.calls.load(Ordering::SeqCst),
        1,
        "the slow call never returned meanwhile"
    );
    let drawn: String = term
        .backend()
        .buffer()
        .content()
        .iter()
        .map(|c| c.symbol())
        .collect();
    assert!(drawn.contains("PAUSED"), "the screen was redrawn after p");
    h.release.send(()).unwrap();
    task.abort();
}

/// Samples `fine` times, then panics inside `sample()`.
struct Panics {
    fine: usize,
}

impl Source for Panics {
    fn machine(&mut self) -> Result<MachineInfo, SourceError> {
        Ok(build::machine())
    }

    fn sample(&mut self) -> Result<Sample, SourceError> {
        assert!(self.fine > 0, "injected panic in the source");
        self.fine -= 1;
        Ok(Sample {
            at_ms: 1,
            gpus: vec![build::gpu(0, 80 * GIB, 10 * GIB, GIB)],
            ..Default::default()
        })
    }
}

fn panics_after(fine: usize) -> Factory {
    Arc::new(move || Ok(Box::new(Panics { fine }) as Box<dyn Source>))
}

#[tokio::test(start_paused = true)]
async fn a_panic_in_the_source_is_reported_not_swallowed() {
    let (tx, mut rx) = mpsc::channel(16);
    sampler::spawn(panics_after(1), Duration::from_secs(1), tx);
    assert!(matches!(
        rx.recv().await,
        Some(Msg::Host(_, HostEvent::Started(_)))
    ));
    assert!(matches!(
        rx.recv().await,
        Some(Msg::Host(_, HostEvent::Sample(_)))
    ));
    let msg = rx.recv().await;
    assert!(
        matches!(&msg, Some(Msg::Host(_, HostEvent::SourceFailed { reason, .. })) if reason.contains("panic")),
        "{msg:?}"
    );
    assert!(rx.recv().await.is_none(), "the sampler ends");

    // `gpumon record` keeps what it wrote and fails (it used to report success).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ndjson");
    let pending = std::future::pending::<i32>();
    let got = record::record(
        panics_after(2),
        &path,
        Duration::from_secs(1),
        None,
        None,
        pending,
    )
    .await;
    assert!(
        matches!(&got, Err(RecordError::Stopped(why)) if why.contains("panic")),
        "{got:?}"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 3, "header and the two samples taken");
}
