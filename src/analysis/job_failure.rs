//! A distributed job's failure, live: each failure read from a log is placed (its process, by
//! the rank its line names: `join.rs`) and, when it is a rank's, added to its job's open failure
//! with the ranks' processes that ended since; the job's events are judged (`judge.rs`: the
//! first failure is the root cause, the others consequences) and told in one alert per job
//! failure (`render.rs`, in `words.rs`'s sentences). A later rank's failure amends that alert (`Machine::record_job_failure`
//! keeps the record and amends the alert in place); the pipeline calls [`judge`] before the
//! failures that are no rank's go to `findings`.

pub mod counted;
pub mod join;
pub mod judge;
pub mod render;
pub mod story;
pub mod tell;
pub mod words;

use crate::model::job_failure::MAX_RANK_EVENTS;
use crate::model::{Ending, Group, JobFailure, Machine, RankEvent};
use crate::oom::dist::Dist;
use crate::oom::failure::{Dialect, Failure};
use crate::sample::EndHow;
use crate::sample::Framework;

pub use join::attribute;

/// A job's later failures join its open one within this long of its last event.
pub const WINDOW_MS: u64 = 15 * 60_000;
/// A rank's process still running this long after its own allocation failure ran on after it.
pub const SURVIVE_MS: u64 = 30_000;
/// A probed process's end record is waited for this long after it was seen gone.
pub const END_WAIT_MS: u64 = 3_000;
/// A rank's process that ended this long before its job's failure was opened is part of it.
const ENDED_BEFORE_MS: u64 = 10_000;

/// What [`judge`] found: the job failures opened or changed this tick (each with its alert),
/// and the failures that are no rank's, for `findings`.
#[derive(Debug, Default)]
pub struct Judged {
    pub records: Vec<JobFailure>,
    pub rest: Vec<Failure>,
}

/// Places each failure and updates its job's failure; adds the ranks' processes that ended to
/// the open ones.
pub fn judge(machine: &Machine, failures: Vec<Failure>, at_ms: u64) -> Judged {
    let mut changed: Vec<JobFailure> = Vec::new();
    let mut rest = Vec::new();
    for mut f in failures {
        let place = join::place(machine, &f);
        let writer = place.pid.or(f.pid);
        in_its_own_words(machine, &mut f, writer);
        let group = match &place.job {
            Some(j) => Group::Job(j.clone()),
            None if f.rank.is_some()
                || f.local_rank.is_some()
                || f.dist.is_some()
                || f.prefix.is_some() =>
            {
                Group::Log(f.log.clone())
            }
            None => {
                rest.push(f);
                continue;
            }
        };
        f.pid = place.pid;
        let event = RankEvent {
            pid: place.pid,
            rank: place.rank.or(f.rank),
            local_rank: f.local_rank,
            at_ms: f.at_ms,
            unjoined: place.unjoined,
            failure: Some(f),
            ending: None,
            survived: false,
        };
        let window = window(&event);
        let i = open(machine, &mut changed, &group, event.at_ms, window, at_ms);
        push(&mut changed[i], event);
    }
    // The ranks' processes that ended while their job's failure is open.
    let open_jobs: Vec<(Group, u64)> = machine
        .job_failures
        .iter()
        .chain(&changed)
        .filter(|r| matches!(r.group, Group::Job(_)))
        .filter(|r| at_ms.saturating_sub(last(r)) <= WINDOW_MS)
        .map(|r| (r.group.clone(), r.opened_ms))
        .collect();
    for (group, opened) in open_jobs {
        let Group::Job(id) = &group else { continue };
        let Some(job) = machine.jobs.iter().find(|j| j.id == *id) else {
            continue;
        };
        let i = match changed
            .iter()
            .position(|r| r.group == group && r.opened_ms == opened)
        {
            Some(i) => i,
            None => {
                let Some(r) = machine
                    .job_failures
                    .iter()
                    .find(|r| r.group == group && r.opened_ms == opened)
                else {
                    continue;
                };
                changed.push(r.clone());
                changed.len() - 1
            }
        };
        let rec = &mut changed[i];
        let since = opened.saturating_sub(ended_before(rec));
        let mut added = ran_on(machine, rec, job, at_ms);
        for row in &job.ranks {
            let Some(ended) = row.exited_ms.filter(|e| *e >= since) else {
                continue;
            };
            if rec.events.iter().any(|e| e.pid == Some(row.pid)) {
                continue;
            }
            push(
                rec,
                RankEvent {
                    pid: Some(row.pid),
                    rank: row.rank,
                    local_rank: row.local_rank,
                    at_ms: ended,
                    failure: None,
                    unjoined: None,
                    ending: ending(machine, row.pid, Some(ended), at_ms),
                    survived: false,
                },
            );
            added = true;
        }
        if !added && machine.job_failures.iter().any(|r| r == rec) {
            changed.remove(i);
        }
    }
    for rec in &mut changed {
        rec.alert = render::alert(machine, rec);
    }
    Judged {
        records: changed,
        rest,
    }
}

/// Fills in how each event's process ended, where its probe's record has come (or will not:
/// [`END_WAIT_MS`] after the exit of a probed process), and marks the rank failures its
/// process ran on after as survived: still running [`SURVIVE_MS`] after them, or ended through
/// the interpreter's own exit after XLA's allocator warning. Whether any event changed.
fn ran_on(machine: &Machine, rec: &mut JobFailure, job: &crate::model::Job, at_ms: u64) -> bool {
    let mut any = false;
    for e in &mut rec.events {
        let Some(pid) = e.pid else { continue };
        let exited = job
            .ranks
            .iter()
            .find(|r| r.pid == pid)
            .and_then(|r| r.exited_ms);
        if e.ending.is_none()
            && let Some(end) = ending(machine, pid, exited, at_ms)
        {
            e.ending = Some(end);
            any = true;
        }
        let own = e.failure.as_ref().is_some_and(|f| f.dist.is_none());
        if !own || e.survived {
            continue;
        }
        let lived = match exited {
            None => at_ms >= e.at_ms.saturating_add(SURVIVE_MS),
            Some(x) => x >= e.at_ms.saturating_add(SURVIVE_MS),
        };
        let exited_normally = matches!(e.ending, Some(Ending::Exit { .. }));
        let warned = e
            .failure
            .as_ref()
            .is_some_and(Failure::is_allocator_warning);
        let survived = match (&e.ending, exited) {
            (Some(Ending::Raised { .. } | Ending::Unrecorded), _) => false,
            _ => (lived && (exited.is_none() || exited_normally)) || (warned && exited_normally),
        };
        if survived {
            e.survived = true;
            any = true;
        }
    }
    any
}

/// How `pid` ended by its probe's record; [`Ending::Unrecorded`] once a probed process has been
/// gone [`END_WAIT_MS`] with no record; `None` while it runs or no probe ran in it.
fn ending(machine: &Machine, pid: u32, exited: Option<u64>, at_ms: u64) -> Option<Ending> {
    let exited = exited?;
    let tracks = machine.processes.values().filter(|t| t.sample.pid == pid);
    let mut probed = false;
    for t in tracks {
        if let Some(end) = &t.end {
            return Some(match (end.how, &end.exception) {
                (EndHow::Exit, _) => Ending::Exit {
                    code: end.code.and_then(|c| i32::try_from(c).ok()),
                },
                (EndHow::Exception, Some(x)) => Ending::Raised {
                    kind: x.kind.clone(),
                    message: x.message.clone(),
                },
                (EndHow::Exception, None) => Ending::Raised {
                    kind: "an exception".into(),
                    message: String::new(),
                },
            });
        }
        probed |= t.pool_history.is_some();
    }
    (probed && at_ms >= exited.saturating_add(END_WAIT_MS)).then_some(Ending::Unrecorded)
}

/// XLA's allocator lines are TensorFlow's and JAX's alike: in a JAX process they are JAX's (its
/// settings and words in the alert, not TensorFlow's).
fn in_its_own_words(machine: &Machine, f: &mut Failure, pid: Option<u32>) {
    if f.source != Some(Dialect::Tensorflow) {
        return;
    }
    let jax = pid.is_some_and(|p| {
        machine
            .processes
            .values()
            .any(|t| t.sample.pid == p && t.sample.framework.value() == Some(&Framework::Jax))
    });
    if jax {
        f.source = Some(Dialect::Jax);
    }
}

/// How long after the job's last event an event still belongs to the same failure: a watchdog
/// fires its timeout after the failure it waited on.
fn window(e: &RankEvent) -> u64 {
    match e.failure.as_ref().and_then(|f| f.dist.as_ref()) {
        Some(Dist::WatchdogTimeout { timeout_ms, .. }) => {
            WINDOW_MS.max(timeout_ms.saturating_add(5 * 60_000))
        }
        _ => WINDOW_MS,
    }
}

/// How long before the failure was opened a rank's end counts: longer when a rank waited on a
/// collective (the one that ended may be why).
fn ended_before(rec: &JobFailure) -> u64 {
    rec.events
        .iter()
        .filter_map(|e| match e.failure.as_ref()?.dist.as_ref()? {
            Dist::WatchdogTimeout { timeout_ms, .. } => Some(timeout_ms.saturating_add(60_000)),
            _ => None,
        })
        .max()
        .unwrap_or(ENDED_BEFORE_MS)
        .max(ENDED_BEFORE_MS)
}

fn last(r: &JobFailure) -> u64 {
    r.events
        .iter()
        .map(|e| e.at_ms)
        .max()
        .unwrap_or(r.opened_ms)
}

/// The index in `changed` of the group's open failure (copied from the machine's, or new).
fn open(
    machine: &Machine,
    changed: &mut Vec<JobFailure>,
    group: &Group,
    event_ms: u64,
    window: u64,
    at_ms: u64,
) -> usize {
    let is_open = |r: &JobFailure| r.group == *group && event_ms.saturating_sub(last(r)) <= window;
    if let Some(i) = changed.iter().rposition(is_open) {
        return i;
    }
    if let Some(r) = machine
        .job_failures
        .iter()
        .rev()
        .find(|r| r.group == *group)
        && is_open(r)
    {
        changed.push(r.clone());
        return changed.len() - 1;
    }
    changed.push(JobFailure {
        group: group.clone(),
        opened_ms: at_ms,
        events: Vec::new(),
        dropped: 0,
        alert: render::placeholder(at_ms),
    });
    changed.len() - 1
}

fn push(rec: &mut JobFailure, e: RankEvent) {
    if rec.events.len() < MAX_RANK_EVENTS {
        rec.events.push(e);
    } else {
        rec.dropped = rec.dropped.saturating_add(1);
    }
}

#[cfg(test)]
pub(crate) mod tests;
