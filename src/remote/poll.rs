//! The pollers' schedule on the one runtime: a task per host (no thread per host) that waits
//! its turn for one of `CONCURRENCY` permits, makes its blocking HTTP exchange on tokio's
//! blocking pool, sends the report, then sleeps the interval (or the backoff while it fails).
//! A host the screen opens is polled at once and asked for its fine history (`/snapshot?tiers=0`:
//! without the days of coarse tiers); the others get the compact snapshot (`/snapshot?history=0`).

use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc, watch};

use super::{Client, backoff, poll};
use crate::model::Config;
use crate::screen::{Msg, Remote};

/// Hosts read at the same time, at most (so at most this many blocking threads for the fleet).
pub const CONCURRENCY: usize = 8;

/// The host the screen has open (`None`: the overview); its poller asks for the full history.
pub type Opened = watch::Receiver<Option<usize>>;

/// What every host's poller shares.
#[derive(Clone)]
pub struct Schedule {
    pub client: Client,
    pub config: Config,
    pub interval: Duration,
    pub opened: Opened,
    pub tx: mpsc::Sender<Msg>,
    permits: Arc<Semaphore>,
}

impl Schedule {
    pub fn new(
        client: Client,
        config: Config,
        interval: Duration,
        opened: Opened,
        tx: mpsc::Sender<Msg>,
    ) -> Self {
        Schedule {
            client,
            config,
            interval,
            opened,
            tx,
            permits: Arc::new(Semaphore::new(CONCURRENCY)),
        }
    }

    /// Polls `url` as machine `n` until the receiver is gone (a task on the current runtime).
    pub fn spawn_host(&self, n: usize, url: String) {
        let (client, config) = (self.client.own_pool(), self.config.clone());
        self.repeat(n..n + 1, move |opened| {
            let full = opened == Some(n);
            vec![(
                n,
                poll(&client, &url, &config, full, crate::clock::unix_ms()),
            )]
        });
    }

    /// Runs `tick` now and after each wait, on the blocking pool while holding a permit, and
    /// sends its reports, until the receiver is gone. `tick` is told which host the screen has
    /// open. Waits grow while the reports are failures; a wait ends early when the screen opens
    /// one of the hosts `mine`.
    pub(super) fn repeat(
        &self,
        mine: Range<usize>,
        tick: impl FnMut(Option<usize>) -> Vec<(usize, Remote)> + Send + 'static,
    ) {
        let Schedule {
            interval,
            mut opened,
            tx,
            permits,
            ..
        } = self.clone();
        // One exchange at a time: the lock only hands `tick` to the blocking thread.
        let tick = Arc::new(Mutex::new(tick));
        tokio::spawn(async move {
            let mut failures = 0u32;
            loop {
                let open = *opened.borrow_and_update();
                let Ok(permit) = Arc::clone(&permits).acquire_owned().await else {
                    return;
                };
                let tick = Arc::clone(&tick);
                let exchange = tokio::task::spawn_blocking(move || {
                    let mut tick = tick.lock().unwrap_or_else(PoisonError::into_inner);
                    (*tick)(open)
                });
                let Ok(reports) = exchange.await else {
                    return;
                };
                drop(permit);
                let ok = reports
                    .iter()
                    .all(|(_, r)| !matches!(r, Remote::Failed { .. }));
                for (n, report) in reports {
                    if tx.send(Msg::Remote(n, report)).await.is_err() {
                        return;
                    }
                }
                failures = if ok { 0 } else { failures.saturating_add(1) };
                let wait = if ok {
                    interval
                } else {
                    backoff(interval, failures)
                };
                wait_or_opened(wait, &mut opened, &mine).await;
            }
        });
    }
}

/// Sleeps `wait`, or less if one of the hosts `mine` is opened meanwhile.
async fn wait_or_opened(wait: Duration, opened: &mut Opened, mine: &Range<usize>) {
    let sleep = tokio::time::sleep(wait);
    tokio::pin!(sleep);
    loop {
        tokio::select! {
            () = &mut sleep => return,
            changed = opened.changed() => match changed {
                Ok(()) if opened.borrow_and_update().is_some_and(|n| mine.contains(&n)) => return,
                Ok(()) => {}
                // The screen is gone (or never told): the interval alone paces the polls.
                Err(_) => return sleep.await,
            },
        }
    }
}
