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

/// How a rank's process ended, by what its allocator probe recorded from inside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// The interpreter exited: the script's end, `sys.exit(n)` (`code`: its exit status, where the
    /// probe could know it; a status of 0 is a normal end).
    Exit { code: Option<i32> },
    /// An uncaught exception ended it (`kind`: its module-qualified type).
    Raised { kind: String, message: String },
    /// The probe ran but left no end record: killed by a signal, `os._exit`, a crash.
    Unrecorded,
}

impl Ending {
    /// Whether the exception is an out-of-memory error in its framework's own type or words.
    pub fn raised_oom(&self) -> bool {
        match self {
            Ending::Raised { kind, message } => {
                kind.ends_with("OutOfMemoryError")
                    || message.contains("RESOURCE_EXHAUSTED")
                    || message.contains("out of memory")
                    || message.contains("Out of memory")
            }
            _ => false,
        }
    }

    /// Whether the exception is what a rank raises when its peers or its launcher went away
    /// (NCCL's and the store's errors, JAX's coordination service, an interrupt): a consequence.
    pub fn raised_by_peers(&self) -> bool {
        match self {
            Ending::Raised { kind, message } => {
                kind.contains(".Dist")
                    || kind.starts_with("Dist")
                    || kind.ends_with("KeyboardInterrupt")
                    || message.contains("NCCL")
                    || message.contains("UNAVAILABLE")
                    || message.contains("DEADLINE_EXCEEDED")
                    || message.contains("Connection reset")
                    || message.contains("Broken pipe")
            }
            _ => false,
        }
    }

    /// In words, after "rank 2 ": "exited normally (status 0)", "raised torch.OutOfMemoryError".
    pub fn words(&self) -> String {
        match self {
            Ending::Exit { code: Some(0) } => "exited normally (status 0)".into(),
            Ending::Exit { code: Some(c) } => format!("exited with status {c}"),
            Ending::Exit { code: None } => {
                "exited through the interpreter (its exit status is not known from inside)".into()
            }
            Ending::Raised { kind, message } if message.is_empty() => format!("raised {kind}"),
            Ending::Raised { kind, message } => format!("raised {kind}: {message}"),
            Ending::Unrecorded => {
                "ended with no end record (killed by a signal, os._exit or a crash)".into()
            }
        }
    }
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
    /// How its process ended, by its probe's record (`None`: no probe, or not ended yet).
    pub ending: Option<Ending>,
    /// The failure's process ran on after it (alive well after, or ended normally): an
    /// allocation failure it survived.
    pub survived: bool,
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
