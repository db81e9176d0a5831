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
use crate::model::{Group, JobFailure, Machine, RankEvent};
use crate::oom::dist::Dist;
use crate::oom::failure::Failure;

pub use join::attribute;

/// A job's later failures join its open one within this long of its last event.
pub const WINDOW_MS: u64 = 15 * 60_000;
/// A rank's process still running this long after its own allocation failure ran on after it.
pub const SURVIVE_MS: u64 = 30_000;
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
        let mut added = ran_on(rec, job, at_ms);
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
                    ending: None,
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

/// Marks the rank failures whose process still ran [`SURVIVE_MS`] after them as survived;
/// whether any was.
fn ran_on(rec: &mut JobFailure, job: &crate::model::Job, at_ms: u64) -> bool {
    let mut any = false;
    for e in &mut rec.events {
        let own = e.failure.as_ref().is_some_and(|f| f.dist.is_none());
        if !own || e.survived || at_ms < e.at_ms.saturating_add(SURVIVE_MS) {
            continue;
        }
        let alive = e.pid.is_some_and(|p| {
            job.ranks
                .iter()
                .any(|r| r.pid == p && r.exited_ms.is_none_or(|x| x >= e.at_ms + SURVIVE_MS))
        });
        if alive {
            e.survived = true;
            any = true;
        }
    }
    any
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
