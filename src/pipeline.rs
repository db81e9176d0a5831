//! The one headless pipeline behind every front end (the screen, `record`, `snapshot`, `serve`):
//! the sampler's events applied to a machine, then analysis on the machine, whose findings go
//! back into it as alerts.

pub mod alert_maps;

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::analysis;
use crate::model::{Event, Machine};
use crate::oom::failure::Failure;
use crate::sampler::{self, Factory};

/// Applies one event: a sample is taken in, then analysed against the machine it produced. When
/// the source ends, the memory faults still waiting for their Xid are raised as they are.
pub fn apply(machine: &mut Machine, event: Event) {
    machine.update(&event);
    match event {
        Event::Sample(mut sample) => {
            machine.unhold(&mut sample);
            let failures = std::mem::take(&mut sample.failures);
            let notices = std::mem::take(&mut sample.notices);
            let events = sample.events.clone();
            let at_ms = sample.at_ms;
            machine.ingest(sample);
            // A rank's line joined to its process before a memory fault waits for its Xid.
            let failures = analysis::job_failure::attribute(machine, failures);
            let failures = due(machine, failures, at_ms);
            // A rank's failure goes to its job's one alert (new, or amended in place).
            let judged = analysis::job_failure::judge(machine, failures, at_ms);
            for record in judged.records {
                machine.record_job_failure(record);
            }
            let alerts = analysis::findings(machine, &judged.rest, &events, &notices, at_ms);
            machine.add_alerts(alerts);
        }
        Event::SourceEnded => {
            let waited = std::mem::take(&mut machine.waiting_faults);
            let at_ms = machine.now_ms;
            let judged = analysis::job_failure::judge(machine, waited, at_ms);
            for record in judged.records {
                machine.record_job_failure(record);
            }
            let alerts = analysis::failure_alerts(machine, &judged.rest);
            machine.add_alerts(alerts);
        }
        _ => {}
    }
}

/// The failures to judge now: the sample's, and the memory faults that waited for their Xid and
/// need wait no longer; the others wait in the machine (`analysis::fault::waits_for_xid`).
fn due(machine: &mut Machine, failures: Vec<Failure>, at_ms: u64) -> Vec<Failure> {
    let waiting = std::mem::take(&mut machine.waiting_faults);
    let (wait, now): (Vec<Failure>, Vec<Failure>) = waiting
        .into_iter()
        .chain(failures)
        .partition(|f| analysis::fault::waits_for_xid(f, machine, at_ms));
    machine.waiting_faults = wait;
    now
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
