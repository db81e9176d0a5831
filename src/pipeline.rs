//! The one headless pipeline behind every front end (the screen, `record`, `snapshot`, `serve`):
//! the sampler's events applied to a machine, then analysis on the machine, whose findings go
//! back into it as alerts.

pub mod alert_maps;

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::analysis;
use crate::model::{Event, Machine};
use crate::sampler::{self, Factory};

/// Applies one event: a sample is taken in, then analysed against the machine it produced.
pub fn apply(machine: &mut Machine, event: Event) {
    machine.update(&event);
    if let Event::Sample(mut sample) = event {
        machine.unhold(&mut sample);
        let failures = std::mem::take(&mut sample.failures);
        let notices = std::mem::take(&mut sample.notices);
        let events = sample.events.clone();
        let at_ms = sample.at_ms;
        machine.ingest(sample);
        let alerts = analysis::findings(machine, &failures, &events, &notices, at_ms);
        machine.add_alerts(alerts);
    }
}

/// A sampler started for a front end without a screen; its task stops when this is dropped.
pub struct Feed {
    rx: mpsc::Receiver<Event>,
    sampler: JoinHandle<()>,
}

impl Feed {
    pub fn start(factory: Factory, interval: Duration) -> Feed {
        let (tx, rx) = mpsc::channel(16);
        let sampler = sampler::spawn(factory, interval, tx);
        Feed { rx, sampler }
    }

    /// The next event; `None` once the sampler has stopped.
    pub async fn next(&mut self) -> Option<Event> {
        self.rx.recv().await
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        self.sampler.abort();
    }
}
