//! A job failure's one alert, by its story (`story.rs`): a cascade's root-cause rank, its class
//! and its remedy first (the rank's own failure classified as any OOM or memory fault is:
//! `alert_for_failure`, `fault::alert`), then the other ranks' failures as consequences ("rank 1
//! aborted by NCCL's watchdog at 06:06:43 waiting on ALLREDUCE #3067 (timeout 40 s): a
//! consequence of rank 0's OOM at 06:05:04"); a common cause likewise, every rank named; a stuck
//! rank, a stop from outside, a failure survived in `tell.rs`'s words; or, with no rank seen
//! failing first, what the events say instead. Ranks that ended normally are said as such.

use super::judge::{self, Known, NoRoot, Story, Verdict, Who};
use super::story;
use super::tell::{self, Say};
use super::words;

mod stories;
use crate::analysis::{alert_for_failure, fault};
use crate::model::units::{clock, duration_ms};
use crate::model::{Alert, Group, JobFailure, Level, Machine, RankEvent};
use crate::oom::dist::Dist;
use stories::{common, from_told, stalled_before};

/// The alert a record carries before it is rendered.
pub fn placeholder(at_ms: u64) -> Alert {
    Alert {
        at_ms,
        gpu_uuid: None,
        pid: None,
        level: Level::Failure,
        class: "job-failure".into(),
        confidence: None,
        title: String::new(),
        evidence: Vec::new(),
        remedy: None,
        job: None,
    }
}

/// " at 06:06:43": when its line was written (its own time, or the latest it can have been: see
/// `analysis::late`), or when the process was seen gone.
fn at(e: &RankEvent) -> String {
    format!(" at {}", clock(e.at_ms))
}

fn plural(n: usize, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

/// The alert that tells `rec`.
pub fn alert(machine: &Machine, rec: &JobFailure) -> Alert {
    let v = story::judge(&rec.events);
    let who = judge::whom(&rec.events);
    let job = match &rec.group {
        Group::Job(j) => Some(j.clone()),
        Group::Log(_) => None,
    };
    let label = |i: usize| who[i].label();
    let say = Say {
        events: &rec.events,
        who: &who,
        label: &label,
        at: &at,
    };
    let mut a = match &v.story {
        Story::Cascade { root, known } => rooted(machine, rec, &v, &who, *root, *known),
        Story::Common { own } => common(machine, rec, &v, &say, own),
        Story::NoRoot(NoRoot::Timeout(i)) => stalled_before(machine, rec, &v, &who, *i)
            .unwrap_or_else(|| unrooted(machine, rec, &v, &who, NoRoot::Timeout(*i))),
        Story::NoRoot(n) => unrooted(machine, rec, &v, &who, *n),
        _ => match tell::told(&say, &v) {
            Some(t) => from_told(machine, rec, &v, &who, t),
            None => unrooted(machine, rec, &v, &who, NoRoot::Stopped),
        },
    };
    a.job = job;
    a.evidence.extend(ended_otherwise(rec, &v, &who));
    let notes = rec
        .events
        .iter()
        .filter_map(|e| e.unjoined.clone())
        .collect::<Vec<_>>();
    a.evidence.extend(notes);
    // A rank's line read late is told as such, once.
    for f in rec.events.iter().filter_map(|e| e.failure.as_ref()) {
        let place = crate::analysis::late::place(f);
        if crate::analysis::late::read_late(f).is_some() && !a.evidence.contains(&place) {
            a.evidence.push(place);
        }
    }
    if rec.dropped > 0 {
        a.evidence
            .push(format!("{} more rank events not kept", rec.dropped));
    }
    a
}

/// The ranks that ended normally, ran on, or ended long after with no word: never consequences.
fn ended_otherwise(rec: &JobFailure, v: &Verdict, who: &[Who]) -> Vec<String> {
    let normal = v.normal.iter().map(|i| {
        let e = &rec.events[*i];
        let said = words::words(e, who[*i], &at(e), None);
        if e.survived {
            format!("{said}; it ran on after it")
        } else {
            format!("{said}: not a consequence")
        }
    });
    let later = v.later.iter().map(|i| {
        let e = &rec.events[*i];
        match &e.ending {
            Some(_) => format!(
                "{}, long after: not called a consequence",
                words::words(e, who[*i], &at(e), None)
            ),
            None => format!(
                "{} ended{} with no line of its own and no end record: how it ended is not known",
                who[*i].label(),
                at(e)
            ),
        }
    });
    normal.chain(later).collect()
}

/// Every consequence in words, against the root cause's phrase.
fn consequences(rec: &JobFailure, v: &Verdict, who: &[Who], of: Option<String>) -> Vec<String> {
    v.followed
        .iter()
        .map(|i| {
            let e = &rec.events[*i];
            let said = words::words(e, who[*i], &at(e), None);
            words::against_root(said, judge::role(e), of.as_deref())
        })
        .collect()
}

fn rooted(
    machine: &Machine,
    rec: &JobFailure,
    v: &Verdict,
    who: &[Who],
    i: usize,
    known: Known,
) -> Alert {
    let e = &rec.events[i];
    let w = who[i];
    let mut n = v.followed_ranks(&rec.events, who);
    // A root of no known rank is one of the job's ranks: they cannot all have followed it.
    if let (Who::Unknown, Group::Job(id)) = (w, &rec.group)
        && let Some(job) = machine.jobs.iter().find(|j| j.id == *id)
        && n >= job.ranks.len()
    {
        n = job.ranks.len().saturating_sub(1);
    }
    let root = format!("{}{}", words::root_phrase(e, w), at(e));
    let followed = consequences(rec, v, who, Some(root));
    let naming: Vec<String> = v
        .naming
        .iter()
        .map(|k| words::words(&rec.events[*k], who[*k], &at(&rec.events[*k]), None))
        .collect();
    let rank_of_job = matches!(rec.group, Group::Job(_)) || n > 0;
    // Every rank was seen climbing alike before it: the first to fail is not "the" cause.
    let alike = grew_alike(machine, rec);
    let head = match (rank_of_job, n, alike) {
        (false, _, _) => String::new(),
        (true, 0, _) => format!("{}: ", w.label()),
        (true, _, true) => format!(
            "every rank grew alike, {} failed first and {} ended with it: one cause in code every rank runs; ",
            w.label(),
            plural(n, "other rank")
        ),
        (true, _, false) => format!(
            "{} failed first, {} followed: ",
            w.label(),
            plural(n, "rank")
        ),
    };
    // Only where every other rank's end is a consequence: none failed of its own too.
    let all_followed = v
        .followed
        .iter()
        .all(|k| judge::role(&rec.events[*k]) == judge::Role::Followed);
    let after = if n > 0 && alike {
        format!(
            " Every rank grew alike before {} failed: the fix is in the code every rank runs, and it serves them all.",
            w.label()
        )
    } else if n > 0 && all_followed {
        format!(
            " The other ranks failed because {} did: they need no fix of their own.",
            w.label()
        )
    } else {
        String::new()
    };
    match (known, e.failure.as_ref()) {
        (Known::Own, Some(f)) => {
            let mut base = match f.fault {
                Some(kind) => fault::alert(f, kind, machine),
                None => alert_for_failure(f, machine),
            };
            base.title = format!("{head}{}", base.title);
            let mut evidence = naming;
            evidence.append(&mut base.evidence);
            evidence.extend(followed);
            base.evidence = evidence;
            base.remedy = base.remedy.map(|r| format!("{r}{after}"));
            base
        }
        _ => {
            let said = words::words(e, w, &at(e), None);
            let recorded = e
                .ending
                .as_ref()
                .map(|end| format!("its probe recorded that it {}", end.words()));
            let (confidence, how) = match (known, recorded) {
                (Known::Exited, _) => (
                    "likely",
                    "its process ended first, with no line of its own".to_string(),
                ),
                (Known::Own, Some(r)) => ("certain", r),
                _ => ("certain", "its launcher names it".to_string()),
            };
            let pid = e.pid.or_else(|| pid_of(machine, rec, w));
            let mut evidence = vec![format!("{said} ({how})")];
            evidence.extend(naming);
            evidence.extend(followed);
            Alert {
                at_ms: e.at_ms,
                gpu_uuid: pid.and_then(|p| gpu_of(machine, p)),
                pid,
                level: Level::Failure,
                class: "rank-failed".into(),
                confidence: Some(confidence.into()),
                title: format!(
                    "{} failed first ({how}){}: its own output holds the error",
                    w.label(),
                    if n > 0 {
                        format!(", {} followed", plural(n, "rank"))
                    } else {
                        String::new()
                    }
                ),
                evidence,
                remedy: Some(format!(
                    "Read {}'s own output for its error (its traceback, or the kernel log if it was killed: dmesg) and fix that.{after}",
                    w.label()
                )),
                job: None,
            }
        }
    }
}

fn unrooted(
    machine: &Machine,
    rec: &JobFailure,
    v: &Verdict,
    who: &[Who],
    no_root: NoRoot,
) -> Alert {
    let followed = consequences(rec, v, who, None);
    let n = v.followed_ranks(&rec.events, who);
    let first = v.followed.first().copied().unwrap_or(0);
    let (class, title, remedy, lead) = match no_root {
        NoRoot::Timeout(i) => {
            let e = &rec.events[i];
            let (op, seq, timeout, ran) = match e.failure.as_ref().and_then(|f| f.dist.as_ref()) {
                Some(Dist::WatchdogTimeout { op, seq, timeout_ms, ran_ms, .. }) => {
                    (op.clone(), *seq, *timeout_ms, *ran_ms)
                }
                _ => (String::new(), 0, 0, None),
            };
            let ran = ran.map_or_else(String::new, |r| format!(" ran {} and", duration_ms(r)));
            (
                "collective-timeout",
                format!(
                    "{} aborted by NCCL's watchdog: {op} #{seq}{ran} passed its {} timeout, and no rank was seen failing: a rank stuck or slow, not dead",
                    who[i].label(),
                    duration_ms(timeout)
                ),
                format!(
                    "Find the rank that never reached {op} #{seq}: run with TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 so each rank dumps its collectives (torchfrtrace names the missing ranks), or py-spy dump the ranks still running; raise the timeout (init_process_group(timeout=…)) only for work one rank legitimately does alone (a checkpoint, an evaluation)."
                ),
                i,
            )
        }
        NoRoot::PeerLost(i) => (
            "peer-lost",
            format!(
                "{} lost its NCCL peer and no rank was seen failing: the failed rank's output is not among the logs gpumon reads",
                who[i].label()
            ),
            "Read the other ranks' output (another node's, perhaps) for the first failure; if none failed, check the network between them (NCCL_DEBUG=INFO).".to_string(),
            i,
        ),
        NoRoot::Stopped => (
            "rank-stopped",
            format!("{} of the job ended, no rank seen failing first", plural(n.max(1), "rank")),
            "Read the ranks' own output and the launcher's for the first failure.".to_string(),
            first,
        ),
    };
    let e = &rec.events[lead];
    let pid = e.pid.or_else(|| pid_of(machine, rec, who[lead]));
    Alert {
        at_ms: e.at_ms,
        gpu_uuid: pid.and_then(|p| gpu_of(machine, p)),
        pid,
        level: Level::Failure,
        class: class.into(),
        confidence: Some("likely".into()),
        title: if n > 1 {
            format!("{title}; {} in all", plural(n, "rank"))
        } else {
            title
        },
        evidence: followed,
        remedy: Some(remedy),
        job: None,
    }
}

/// Whether the job's ranks were warned of growing alike (`ranks-grow-alike`) before its failure.
fn grew_alike(machine: &Machine, rec: &JobFailure) -> bool {
    let Group::Job(id) = &rec.group else {
        return false;
    };
    machine.alerts.iter().any(|a| {
        a.class == crate::analysis::ranks::GROW_ALIKE
            && a.job.as_deref() == Some(id.as_str())
            && a.at_ms <= rec.opened_ms
    })
}

/// The pid of the job's process that is `who`, where the job is on this machine.
fn pid_of(machine: &Machine, rec: &JobFailure, who: Who) -> Option<u32> {
    let Group::Job(id) = &rec.group else {
        return None;
    };
    let job = machine.jobs.iter().find(|j| j.id == *id)?;
    let mut rows = job.ranks.iter().filter(|r| match who {
        Who::Rank(n) => r.rank == Some(n),
        Who::Local(n) => r.local_rank == Some(n),
        Who::Pid(p) => r.pid == p,
        Who::Unknown => false,
    });
    match (rows.next(), rows.next()) {
        (Some(r), None) => Some(r.pid),
        _ => None,
    }
}

/// The GPU `pid` holds the most memory on.
fn gpu_of(machine: &Machine, pid: u32) -> Option<String> {
    machine
        .job_of(pid)
        .map(|(_, row)| row.gpu.clone())
        .or_else(|| {
            machine
                .processes
                .values()
                .find(|t| t.sample.pid == pid)
                .map(|t| t.sample.gpu_uuid.clone())
        })
}
