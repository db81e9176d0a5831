//! A distributed job's failure as analysis judged it: the ranks' failures read so far (the first
//! one, its root cause, and those that followed), kept so that a later rank's failure amends the
//! job's one alert instead of raising another. Analysis builds the records; the pipeline hands
//! them here with `Machine::record_job_failure`.

use crate::model::{Alert, Machine};
use crate::oom::failure::Failure;

/// Job failures kept; the oldest record is dropped (its alert stays).
pub const MAX_JOB_FAILURES: usize = 32;
/// Events one job failure keeps; later ones are counted.
pub const MAX_RANK_EVENTS: usize = 64;

/// What a job failure's ranks have in common.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Group {
    /// A distributed job on this machine (`model::Job::id`).
    Job(String),
    /// A log whose writers are no job gpumon knows: the ranks its lines name.
    Log(String),
}

/// One rank's failure, or its process's end.
#[derive(Debug, Clone, PartialEq)]
pub struct RankEvent {
    /// The process it was joined to, or whose exit it is.
    pub pid: Option<u32>,
    pub rank: Option<u32>,
    pub local_rank: Option<u32>,
    /// When it was read, or when the process was seen gone.
    pub at_ms: u64,
    /// The line that said it; `None`: the process ended without a line of its own.
    pub failure: Option<Failure>,
    /// Why its line was not joined to a process, when it was not.
    pub unjoined: Option<String>,
}

/// One failure of a job: every rank event read for it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobFailure {
    pub group: Group,
    /// When it was opened: with `group`, what tells it from the job's later failures.
    pub opened_ms: u64,
    /// In the order read.
    pub events: Vec<RankEvent>,
    /// Events left out past [`MAX_RANK_EVENTS`].
    pub dropped: u32,
    /// The alert that tells it, as last handed to the machine.
    pub alert: Alert,
}

impl Machine {
    /// Keeps a job failure and its alert: a record already kept (the same group, opened at the
    /// same time) is replaced and its alert amended where it stands; a new one adds its alert.
    pub fn record_job_failure(&mut self, record: JobFailure) {
        let kept = self
            .job_failures
            .iter()
            .position(|r| r.group == record.group && r.opened_ms == record.opened_ms);
        match kept {
            Some(i) => {
                let old = std::mem::replace(&mut self.job_failures[i], record);
                self.amend_alert(&old.alert, self.job_failures[i].alert.clone());
            }
            None => {
                self.add_alerts(vec![record.alert.clone()]);
                self.job_failures.push(record);
                let over = self.job_failures.len().saturating_sub(MAX_JOB_FAILURES);
                self.job_failures.drain(..over);
            }
        }
    }

    /// Replaces the alert `old` by `new` where it stands; when `old` is no longer kept, `new`
    /// is added as the newest.
    pub fn amend_alert(&mut self, old: &Alert, new: Alert) {
        match self.alerts.iter().position(|a| a == old) {
            Some(i) => {
                self.alerts[i] = new;
                self.recount_alerts();
            }
            None => self.add_alerts(vec![new]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Config, Level};

    fn alert(title: &str) -> Alert {
        Alert {
            at_ms: 1,
            gpu_uuid: None,
            pid: Some(7),
            level: Level::Failure,
            class: "pool-limit".into(),
            confidence: None,
            title: title.into(),
            evidence: Vec::new(),
            remedy: None,
            job: Some("torchrun:x".into()),
        }
    }

    fn record(at: u64, title: &str) -> JobFailure {
        JobFailure {
            group: Group::Job("torchrun:x".into()),
            opened_ms: at,
            events: Vec::new(),
            dropped: 0,
            alert: alert(title),
        }
    }

    #[test]
    fn a_record_amends_its_alert_in_place() {
        let mut m = Machine::new(Config::new(1000, 60_000));
        m.record_job_failure(record(1, "rank 0 failed"));
        m.add_alerts(vec![Alert {
            job: None,
            ..alert("later, another alert")
        }]);
        m.record_job_failure(record(1, "rank 0 failed first, rank 1 followed"));
        assert_eq!(m.alerts.len(), 2);
        assert_eq!(m.alerts[1].title, "rank 0 failed first, rank 1 followed");
        assert_eq!(m.job_failures.len(), 1);
        // Another failure of the job, later: a record and an alert of its own.
        m.record_job_failure(record(900_000, "rank 1 failed"));
        assert_eq!((m.alerts.len(), m.job_failures.len()), (3, 2));
        // An alert no longer kept: the amended one is added.
        m.alerts.clear();
        m.record_job_failure(record(1, "amended"));
        assert_eq!(m.alerts.len(), 1);
    }
}
