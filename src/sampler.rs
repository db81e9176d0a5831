//! The sampler task: owns the source, runs each blocking `sample()` on tokio's blocking pool on
//! an interval (ticks missed while a sample is slow are skipped, not queued), and sends
//! `Event`s (as whatever message type the receiver takes them in).

use crate::clock::tick_times;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::MissedTickBehavior;

use crate::model::Event;
use crate::source::{Source, SourceError};

/// Builds the source; called off the reactor, again after repeated failures (driver reload).
pub type Factory = Arc<dyn Fn() -> Result<Box<dyn Source>, SourceError> + Send + Sync>;

/// Consecutive failed ticks after which the source is built anew.
const REBUILD_AFTER: u32 = 3;
/// Longest wait between retries while the source fails.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Starts the source, then samples it every `interval` until the receiver is dropped or a
/// replay ends. A source that cannot start sends `SourceFailed` before any `Started`.
pub fn spawn<T: From<Event> + Send + 'static>(
    factory: Factory,
    interval: Duration,
    tx: mpsc::Sender<T>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let Some(mut source) = start(&factory, &tx).await else {
            return;
        };
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
        let mut failures: u32 = 0;
        loop {
            tick.tick().await;
            // The source's clock before this tick, for a failure that loses the source.
            let clock_ms = source.now_ms();
            let (back, result) = match tokio::task::spawn_blocking(move || {
                let r = tick_times::time("source.sample (whole tick)", || source.sample());
                tick_times::tick_done();
                (source, r)
            })
            .await
            {
                Ok(pair) => pair,
                Err(e) => {
                    let reason = format!("sampler failed: {e}");
                    let failed = Event::SourceFailed {
                        at_ms: clock_ms,
                        reason,
                    };
                    let _ = tx.send(failed.into()).await;
                    return;
                }
            };
            source = back;
            let msg = match result {
                Ok(sample) => {
                    failures = 0;
                    Event::Sample(sample)
                }
                Err(SourceError::Ended) => {
                    let _ = tx.send(Event::SourceEnded.into()).await;
                    return;
                }
                // The next tick takes the new lap's first sample.
                Err(SourceError::Lapped(n)) => Event::Lap(n),
                Err(e) => {
                    failures += 1;
                    Event::SourceFailed {
                        at_ms: source.now_ms(),
                        reason: e.to_string(),
                    }
                }
            };
            if tx.send(msg.into()).await.is_err() {
                return;
            }
            if failures > 0 {
                let backoff = interval
                    .saturating_mul(1 << failures.min(6))
                    .min(MAX_BACKOFF);
                tokio::time::sleep(backoff).await;
                if failures.is_multiple_of(REBUILD_AFTER) {
                    let f = Arc::clone(&factory);
                    if let Ok(Ok(fresh)) = tokio::task::spawn_blocking(move || f()).await {
                        source = fresh;
                    }
                }
                tick.reset();
            }
        }
    })
}

async fn start<T: From<Event>>(factory: &Factory, tx: &mpsc::Sender<T>) -> Option<Box<dyn Source>> {
    let f = Arc::clone(factory);
    let started = tokio::task::spawn_blocking(move || {
        let mut source = f()?;
        let machine = source.machine()?;
        Ok::<_, SourceError>((source, machine))
    })
    .await;
    let failed = |reason: String| Event::SourceFailed {
        at_ms: crate::clock::unix_ms(),
        reason,
    };
    match started {
        Ok(Ok((source, machine))) => {
            tx.send(Event::Started(machine).into()).await.ok()?;
            Some(source)
        }
        Ok(Err(e)) => {
            let _ = tx.send(failed(e.to_string()).into()).await;
            None
        }
        Err(e) => {
            let reason = format!("could not start the source: {e}");
            let _ = tx.send(failed(reason).into()).await;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::Sample;
    use crate::source::scripted::{ScriptedSource, build};

    fn sample(at_ms: u64) -> Sample {
        Sample {
            at_ms,
            gpus: vec![build::gpu(0, 100, 10, 1)],
            ..Default::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn starts_samples_reports_failures_and_ends() {
        let script = vec![
            Ok(sample(1)),
            Err("NVML: GPU is lost".to_string()),
            Ok(sample(3)),
        ];
        let factory: Factory = Arc::new(move || {
            Ok(Box::new(ScriptedSource::new(build::machine(), script.clone())) as Box<dyn Source>)
        });
        let (tx, mut rx) = mpsc::channel::<Event>(16);
        spawn(factory, Duration::from_secs(1), tx);
        assert!(matches!(rx.recv().await, Some(Event::Started(_))));
        assert!(matches!(rx.recv().await, Some(Event::Sample(s)) if s.at_ms == 1));
        assert!(
            matches!(rx.recv().await, Some(Event::SourceFailed { reason, .. }) if reason.contains("lost"))
        );
        assert!(matches!(rx.recv().await, Some(Event::Sample(s)) if s.at_ms == 3));
        assert!(matches!(rx.recv().await, Some(Event::SourceEnded)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_looping_replay_says_each_new_lap_before_its_first_sample() {
        let demo = crate::source::replay::ReplaySource::demo().unwrap();
        let cell = std::sync::Mutex::new(Some(demo));
        let factory: Factory = Arc::new(move || {
            let demo = cell.lock().unwrap().take().unwrap();
            Ok(Box::new(demo) as Box<dyn Source>)
        });
        let (tx, mut rx) = mpsc::channel::<Event>(16);
        spawn(factory, Duration::from_millis(10), tx);
        assert!(matches!(rx.recv().await, Some(Event::Started(_))));
        let mut last = 0;
        loop {
            match rx.recv().await {
                Some(Event::Sample(s)) => last = s.at_ms,
                Some(Event::Lap(n)) => {
                    assert_eq!(n, 2);
                    break;
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(matches!(rx.recv().await, Some(Event::Sample(s)) if s.at_ms > last));
    }

    #[tokio::test(start_paused = true)]
    async fn a_replays_failure_is_timed_by_the_replay_not_the_wall_clock() {
        let demo = std::str::from_utf8(crate::source::replay::demo()).unwrap();
        let mut text: String = demo.lines().take(3).map(|l| format!("{l}\n")).collect();
        // A bad line in the middle (a line cut off at the end may be the writer killed).
        text.push_str("{\"at_ms\": oops\n");
        text.push_str(&format!("{}\n", demo.lines().nth(3).unwrap()));
        let replay = crate::source::replay::ReplaySource::read(
            "cut.ndjson",
            std::io::Cursor::new(text.into_bytes()),
        )
        .unwrap();
        let cell = std::sync::Mutex::new(Some(replay));
        let factory: Factory = Arc::new(move || {
            let replay = cell.lock().unwrap().take().unwrap();
            Ok(Box::new(replay) as Box<dyn Source>)
        });
        let (tx, mut rx) = mpsc::channel::<Event>(16);
        spawn(factory, Duration::from_millis(10), tx);
        assert!(matches!(rx.recv().await, Some(Event::Started(_))));
        assert!(matches!(rx.recv().await, Some(Event::Sample(_))));
        let Some(Event::Sample(second)) = rx.recv().await else {
            panic!("a second sample")
        };
        match rx.recv().await {
            Some(Event::SourceFailed { at_ms, .. }) => assert_eq!(at_ms, second.at_ms),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_source_that_cannot_start_says_why() {
        let factory: Factory =
            Arc::new(|| Err(SourceError::Unavailable("NVML library not found".into())));
        let (tx, mut rx) = mpsc::channel::<Event>(4);
        spawn(factory, Duration::from_secs(1), tx);
        assert!(
            matches!(rx.recv().await, Some(Event::SourceFailed { reason, .. }) if reason.contains("not found"))
        );
        assert!(rx.recv().await.is_none());
    }
}
