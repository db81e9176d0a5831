//! The story a job's end tells, from its events' roles, in this order:
//! - **common cause**: two ranks or more failed of their own, alike (the same class of failure),
//!   within [`COMMON_MS`] of each other: the code every rank runs, not the first by a millisecond;
//! - **cascade**: one rank's own failure (an OOM, a memory fault, an uncaught exception its probe
//!   saw; the one a launcher names, if it names one of them), the others its consequences;
//! - **stuck rank**: ranks timed out on collective #N and a rank's own count (its answer to the
//!   flight recorder's dump signal) says it never enqueued #N;
//! - **stop from outside**: the launcher was signalled or the scheduler cancelled the job (a time
//!   limit, a preemption, `scancel`), unless a launcher names a rank that failed with a status of
//!   its own;
//! - the rank a launcher or a peer names (torchrun's root cause, its agent's first failure,
//!   DeepSpeed's, srun's exit code, JAX's failed tasks), unless it waited itself; live, the rank
//!   whose process ended first with no line, before the others' failures (likely);
//! - **survived**: allocation failures the processes ran on after, and nothing else;
//! - else no rank seen failing first (a timeout, a lost peer, ranks stopped).
//!
//! A rank that ended normally (its probe's record) is never a consequence, nor one that ended
//! long after the story with no line and no record ([`LATER_MS`]).

use std::collections::BTreeMap;

use super::judge::{
    Known, NoRoot, Role, Story, Verdict, Who, aborted, is_watchdog, role, weight, whom,
};
use crate::model::RankEvent;
use crate::oom::dist::{Dist, NcclCause};

/// Own failures of several ranks this close together are one common cause.
pub const COMMON_MS: u64 = 10_000;
/// A rank that ended this long after the story's first event, with no line of its own and no
/// end record, is not called its consequence (a launcher stops the others within seconds).
pub const LATER_MS: u64 = 30_000;

/// What kind of own failure an event is, for "alike": an OOM, or a fault's kind.
fn alike_key(e: &RankEvent) -> Option<String> {
    match &e.failure {
        Some(f) if f.dist.is_none() => Some(f.fault.map_or("oom".into(), |k| k.as_str().into())),
        Some(_) => None,
        None => e
            .ending
            .as_ref()
            .filter(|end| end.raised_oom())
            .map(|_| "oom".into()),
    }
}

/// Judges a job's events, in the order read.
pub fn judge(events: &[RankEvent]) -> Verdict {
    let who = whom(events);
    let roles: Vec<Role> = events.iter().map(role).collect();
    let story = story(events, &who, &roles);
    let (anchor, anchor_who) = match &story {
        Story::Cascade { root, .. } => (Some(*root), vec![who[*root]]),
        Story::Common { own } | Story::Survived { own } => {
            (own.first().copied(), own.iter().map(|i| who[*i]).collect())
        }
        Story::Stuck { behind, timeout } => {
            (Some(*timeout), behind.iter().map(|i| who[*i]).collect())
        }
        Story::Outside { stop } => (Some(*stop), Vec::new()),
        Story::NoRoot(_) => (None, Vec::new()),
    };
    let told: Vec<usize> = match &story {
        Story::Cascade { root, .. } => vec![*root],
        Story::Common { own } | Story::Survived { own } => own.clone(),
        Story::Stuck { behind, .. } => behind.clone(),
        Story::Outside { stop } => vec![*stop],
        Story::NoRoot(_) => Vec::new(),
    };
    // A launcher's word on the root's rank; with the root's rank unknown (a rank-less line of a
    // shared log), its word on any rank may be on the root's.
    let naming: Vec<usize> = match story {
        Story::Cascade { root, .. } => (0..events.len())
            .filter(|i| *i != root && (who[*i] == who[root] || who[root] == Who::Unknown))
            .filter(|i| matches!(roles[*i], Role::Named(_)))
            .collect(),
        _ => Vec::new(),
    };
    let first_ms = anchor.map(|i| events[i].at_ms);
    // One event per other rank, its most telling; those about no one rank each.
    let mut best: BTreeMap<Who, usize> = BTreeMap::new();
    let mut loose = Vec::new();
    let (mut normal, mut later) = (Vec::new(), Vec::new());
    for (i, w) in who.iter().enumerate() {
        let of_the_story = *w != Who::Unknown && anchor_who.contains(w);
        if told.contains(&i) || naming.contains(&i) || of_the_story {
            continue;
        }
        match roles[i] {
            Role::Normal | Role::Survived => {
                normal.push(i);
                continue;
            }
            _ => {}
        }
        let e = &events[i];
        // No line, and no record or an interpreter exit whose status is unknown.
        let silent = e.failure.is_none()
            && matches!(
                e.ending,
                None | Some(crate::model::Ending::Exit { code: None })
            );
        if silent && first_ms.is_some_and(|f| e.at_ms > f.saturating_add(LATER_MS)) {
            later.push(i);
            continue;
        }
        if *w == Who::Unknown {
            loose.push(i);
            continue;
        }
        let b = best.entry(*w).or_insert(i);
        if weight(&events[i]) > weight(&events[*b]) {
            *b = i;
        }
    }
    let mut followed: Vec<usize> = best.into_values().chain(loose).collect();
    followed.sort_unstable();
    // A rank with a consequence is not also said to have ended normally.
    normal.retain(|i| {
        !followed
            .iter()
            .any(|f| who[*f] == who[*i] && who[*i] != Who::Unknown)
    });
    Verdict {
        story,
        naming,
        followed,
        normal,
        later,
    }
}

fn story(events: &[RankEvent], who: &[Who], roles: &[Role]) -> Story {
    // Each rank's own failures (an OOM or a fault first), one per rank.
    let mut own: BTreeMap<Who, (u8, usize)> = BTreeMap::new();
    for (i, r) in roles.iter().enumerate() {
        if let Role::Own(s) = r {
            let e = own.entry(who[i]).or_insert((*s, i));
            if *s > e.0 {
                *e = (*s, i);
            }
        }
    }
    if let Some(common) = common(events, who, &own) {
        return Story::Common { own: common };
    }
    let named = named(events, who, roles);
    if let Some((_, i)) = own
        .values()
        .filter(|(s, _)| *s > 0 || own.len() == 1)
        .max_by_key(|(s, i)| {
            let named_rank = named.iter().any(|n| who[*n] == who[*i]);
            (*s, named_rank, std::cmp::Reverse(*i))
        })
    {
        return Story::Cascade {
            root: *i,
            known: Known::Own,
        };
    }
    if let Some(stuck) = stuck(events, who) {
        return stuck;
    }
    let named_own_status = named.iter().any(|n| exited_of_its_own(&events[*n]));
    if let Some(stop) = roles.iter().position(|r| *r == Role::Outside)
        && !named_own_status
    {
        return Story::Outside { stop };
    }
    if let Some(n) = named.first() {
        return Story::Cascade {
            root: *n,
            known: Known::Named,
        };
    }
    if let Some(i) = exited_first(events, who, roles) {
        return Story::Cascade {
            root: i,
            known: Known::Exited,
        };
    }
    let survived: Vec<usize> = (0..events.len())
        .filter(|i| roles[*i] == Role::Survived)
        .collect();
    if !survived.is_empty() {
        return Story::Survived { own: survived };
    }
    Story::NoRoot(no_root(events))
}

/// Two ranks or more whose own failures are alike and within [`COMMON_MS`] of the first.
fn common(
    events: &[RankEvent],
    who: &[Who],
    own: &BTreeMap<Who, (u8, usize)>,
) -> Option<Vec<usize>> {
    let mut by_key: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (w, (s, i)) in own {
        if *w == Who::Unknown || *s < 2 {
            continue;
        }
        if let Some(k) = alike_key(&events[*i]) {
            by_key.entry(k).or_default().push(*i);
        }
    }
    let mut best = by_key.into_values().max_by_key(Vec::len)?;
    best.sort_by_key(|i| (events[*i].at_ms, *i));
    let first = events[*best.first()?].at_ms;
    best.retain(|i| events[*i].at_ms <= first.saturating_add(COMMON_MS));
    let ranks: std::collections::BTreeSet<Who> = best.iter().map(|i| who[*i]).collect();
    (ranks.len() >= 2).then_some(best)
}

/// The events naming a rank as failed, the most authoritative first, leaving out a rank that
/// waited itself, or aborted (SIGABRT: how NCCL's watchdog takes a process down) while others'
/// watchdogs fired: it failed of the timeout like them.
fn named(events: &[RankEvent], who: &[Who], roles: &[Role]) -> Vec<usize> {
    let mut named: Vec<(u8, usize)> = roles
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match r {
            Role::Named(s) if who[i] != Who::Unknown => Some((*s, i)),
            _ => None,
        })
        .collect();
    named.sort_by_key(|(s, i)| (std::cmp::Reverse(*s), *i));
    let any_watchdog = events.iter().any(is_watchdog);
    named
        .into_iter()
        .filter(|(_, n)| {
            let waited = events
                .iter()
                .zip(who)
                .any(|(e, w)| *w == who[*n] && is_watchdog(e));
            let timed_out = any_watchdog && aborted(&events[*n]);
            !(waited || timed_out)
        })
        .map(|(_, n)| n)
        .collect()
}

/// Whether a launcher's line says its rank exited with a status of its own (not a signal).
fn exited_of_its_own(e: &RankEvent) -> bool {
    match e.failure.as_ref().and_then(|f| f.dist.as_ref()) {
        Some(Dist::Torchrun { exitcode, .. }) => exitcode.is_some_and(|c| c > 0),
        Some(Dist::AgentFailed { exitcode, .. }) => *exitcode > 0,
        Some(Dist::DeepspeedExit { code }) => *code > 0,
        Some(Dist::SrunTasks { exit_code, .. }) => exit_code.is_some_and(|c| c > 0),
        _ => false,
    }
}

/// Ranks timed out on collective #N and a rank's own dump line says it never enqueued #N.
fn stuck(events: &[RankEvent], who: &[Who]) -> Option<Story> {
    let (timeout, seq) = events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e.failure.as_ref()?.dist.as_ref()? {
            Dist::WatchdogTimeout { seq, .. } => Some((i, *seq)),
            _ => None,
        })
        .min_by_key(|(i, s)| (*s, *i))?;
    let timed_out: Vec<Who> = events
        .iter()
        .zip(who)
        .filter(|(e, _)| is_watchdog(e))
        .map(|(_, w)| *w)
        .collect();
    let mut behind: Vec<usize> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let Some(Dist::DumpSignal { last_enqueued, .. }) =
            e.failure.as_ref().and_then(|f| f.dist.as_ref())
        else {
            continue;
        };
        let short = i64::try_from(seq).is_ok_and(|s| *last_enqueued < s);
        let known = who[i] != Who::Unknown && !timed_out.contains(&who[i]);
        if short && known && !behind.iter().any(|b| who[*b] == who[i]) {
            behind.push(i);
        }
    }
    (!behind.is_empty()).then_some(Story::Stuck { behind, timeout })
}

/// Live: the process that ended first, with no line and not normally, before another rank's
/// failure.
fn exited_first(events: &[RankEvent], who: &[Who], roles: &[Role]) -> Option<usize> {
    let first_line = events
        .iter()
        .filter(|e| e.failure.is_some())
        .map(|e| e.at_ms)
        .min()?;
    let (ended, _) = events
        .iter()
        .enumerate()
        .filter(|(i, e)| {
            e.failure.is_none()
                && roles[*i] == Role::Followed
                && e.at_ms <= first_line
                && who[*i] != Who::Unknown
        })
        .min_by_key(|(i, e)| (e.at_ms, *i))?;
    let others_failed = events
        .iter()
        .enumerate()
        .any(|(i, e)| e.failure.is_some() && roles[i] != Role::Survived && who[i] != who[ended]);
    others_failed.then_some(ended)
}

fn no_root(events: &[RankEvent]) -> NoRoot {
    if let Some(i) = events.iter().position(is_watchdog) {
        return NoRoot::Timeout(i);
    }
    if let Some(i) = events.iter().position(|e| {
        matches!(
            e.failure.as_ref().and_then(|f| f.dist.as_ref()),
            Some(Dist::NcclError {
                cause: NcclCause::Remote,
                ..
            })
        )
    }) {
        return NoRoot::PeerLost(i);
    }
    NoRoot::Stopped
}
