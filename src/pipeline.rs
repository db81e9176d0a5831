//! The one headless pipeline behind every front end (the screen, `record`, `snapshot`, `serve`):
//! the sampler's events applied to a machine, then analysis on the machine, whose findings go
//! back into it as alerts.

pub mod alert_maps;

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::analysis;
use crate::model::{Alert, Event, Level, Machine};
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
            add(machine, alerts);
        }
        Event::SourceEnded => {
            let waited = std::mem::take(&mut machine.waiting_failures);
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

/// Adds `alerts` to the machine; a rank's growth said for its job takes the place of the `leak`
/// warning its own rule raised for the same rank before (the job's comparison needs a few more
/// readings than the leak rule): one climb stays one alert, dated when it was first warned.
fn add(machine: &mut Machine, alerts: Vec<Alert>) {
    let mut rest = Vec::with_capacity(alerts.len());
    for mut a in alerts {
        if a.class == analysis::ranks::GROW_ALIKE {
            take_over_ranks_leaks(machine, a);
            continue;
        }
        let earlier = (a.class == analysis::ranks::GROWS_ALONE)
            .then(|| {
                machine.alerts.iter().find(|e| {
                    e.class == "leak"
                        && e.level == Level::Suspected
                        && e.pid == a.pid
                        && e.gpu_uuid == a.gpu_uuid
                })
            })
            .flatten()
            .cloned();
        match earlier {
            Some(old) => {
                a.evidence.push(format!(
                    "first warned as this rank's leak at {}; its job's other ranks were seen flat \
                     beside it since",
                    crate::model::units::clock(old.at_ms)
                ));
                a.at_ms = old.at_ms;
                machine.amend_alert(&old, a);
            }
            None => rest.push(a),
        }
    }
    machine.add_alerts(rest);
}

/// A job's ranks growing alike take over the `leak` alerts its ranks' own rules raised before:
/// the first is amended in place (dated when first warned), the others dropped: one climb of
/// every rank, one alert.
fn take_over_ranks_leaks(machine: &mut Machine, mut a: Alert) {
    let of_job = |e: &Alert, m: &Machine| {
        e.class == "leak"
            && e.level == Level::Suspected
            && e.pid.is_some_and(|p| {
                m.job_of(p)
                    .is_some_and(|(j, _)| a.job.as_deref() == Some(j.id.as_str()))
            })
    };
    let earlier: Vec<Alert> = machine
        .alerts
        .iter()
        .filter(|e| of_job(e, machine))
        .cloned()
        .collect();
    let Some(first) = earlier.first() else {
        machine.add_alerts(vec![a]);
        return;
    };
    a.evidence.push(format!(
        "first warned as {} leak(s) of its ranks from {}; every running rank was seen climbing alike since",
        earlier.len(),
        crate::model::units::clock(first.at_ms)
    ));
    a.at_ms = first.at_ms;
    let first = first.clone();
    machine
        .alerts
        .retain(|e| *e == first || !earlier.contains(e));
    machine.amend_alert(&first, a);
}

/// The failures to judge now: the sample's, and those that waited and need wait no longer (a
/// memory fault for its Xid, an OOM line of a shared log for its writer's count); the others wait
/// in the machine (`analysis::fault::waits_for_xid`, `analysis::job_failure::counted`).
fn due(machine: &mut Machine, failures: Vec<Failure>, at_ms: u64) -> Vec<Failure> {
    // Those that waited are joined again: the count an OOM line waited for may have come.
    let waiting = std::mem::take(&mut machine.waiting_failures);
    let waiting = analysis::job_failure::attribute(machine, waiting);
    let (wait, now): (Vec<Failure>, Vec<Failure>) =
        waiting.into_iter().chain(failures).partition(|f| {
            analysis::fault::waits_for_xid(f, machine, at_ms)
                || analysis::job_failure::counted::waits_for_count(f, machine, at_ms)
        });
    machine.waiting_failures = wait;
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
