//! Which rank failed first, and what the others' failures were: each event's role, the root cause
//! among a job's events, and each event in words. Pure, on `RankEvent`s: the live alert and
//! `explain` (which builds events from the lines alone) judge alike.
//!
//! The root cause is, in order: a rank's own failure (an OOM or a memory fault; then a CUDA error
//! inside NCCL), the one a launcher names if it names one of them; else the rank a launcher or a
//! peer names as failed (torchrun's root cause, its agent's first failure, DeepSpeed's, srun's
//! exit code, JAX's failed tasks), unless that rank's own line is a watchdog timeout (then no rank
//! failed: every rank waited); else, live, the rank whose process ended first with no line of
//! its own, before the others' timeouts (likely). Every other rank's event is a consequence.

use std::collections::BTreeMap;

use crate::model::RankEvent;
use crate::oom::dist::{Dist, NcclCause};

/// Whom an event is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Who {
    Rank(u32),
    Local(u32),
    Pid(u32),
    /// Several ranks (srun's task list, JAX's tasks), or nobody said.
    Unknown,
}

impl Who {
    pub fn label(self) -> String {
        match self {
            Who::Rank(r) => format!("rank {r}"),
            Who::Local(l) => format!("local rank {l}"),
            Who::Pid(p) => format!("pid {p}"),
            Who::Unknown => "a rank".into(),
        }
    }
}

/// What an event says of its rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The rank's own failure; the higher, the surer the cause (an OOM or a memory fault 2, a
    /// CUDA error inside NCCL 1).
    Own(u8),
    /// A launcher or a peer names the rank as failed; the higher, the more authoritative.
    Named(u8),
    /// The rank waited, lost its peer, was stopped, or ended with no line.
    Followed,
}

pub fn role(e: &RankEvent) -> Role {
    let Some(f) = &e.failure else {
        return Role::Followed;
    };
    match &f.dist {
        None => Role::Own(2),
        Some(Dist::NcclError {
            cause: NcclCause::Cuda,
            ..
        }) => Role::Own(1),
        Some(Dist::Torchrun { root: true, .. }) => Role::Named(5),
        Some(Dist::AgentFailed { .. }) => Role::Named(4),
        Some(Dist::DeepspeedExit { .. }) => Role::Named(3),
        Some(Dist::SrunTasks { exit_code, how, .. })
            if exit_code.is_some_and(|c| c > 0) || how.contains("Out Of Memory") =>
        {
            Role::Named(2)
        }
        Some(Dist::JaxTasks { .. }) => Role::Named(1),
        Some(_) => Role::Followed,
    }
}

/// How the root cause is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Known {
    /// Its own line: an OOM, a memory fault, a CUDA error.
    Own,
    /// A launcher or a peer named it.
    Named,
    /// Its process ended first with no line of its own, before the others' failures (likely).
    Exited,
}

/// No rank seen failing first: what the events say instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoRoot {
    /// A watchdog timeout (the first one's index): a rank stuck or slow, not dead.
    Timeout(usize),
    /// A NCCL peer gone (the first one's index): the failed rank's output was not read.
    PeerLost(usize),
    /// Ranks stopped or ended, no failure seen.
    Stopped,
}

/// A job's events judged.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The root cause's event, and how it is known.
    pub root: Option<(usize, Known)>,
    /// Other events that name the root cause's rank (a launcher confirming it).
    pub naming: Vec<usize>,
    /// One event per other rank (its most telling), then those about no one rank, in the order
    /// read.
    pub followed: Vec<usize>,
    /// Without a root cause, what there is instead.
    pub no_root: Option<NoRoot>,
}

/// Whom each event is about: its rank, or the rank its local rank or pid has where a launcher's
/// line says both (torchrun's summary), else its local rank, its pid.
pub fn whom(events: &[RankEvent]) -> Vec<Who> {
    let mut by_pid: BTreeMap<u32, u32> = BTreeMap::new();
    let mut by_local: BTreeMap<u32, Option<u32>> = BTreeMap::new();
    for e in events {
        let Some(r) = e.rank else { continue };
        if let Some(p) = e.pid.or_else(|| e.failure.as_ref()?.dist.as_ref()?.pid()) {
            by_pid.insert(p, r);
        }
        if let Some(l) = e.local_rank {
            // A local rank two ranks share (several nodes) tells nothing.
            let entry = by_local.entry(l).or_insert(Some(r));
            if *entry != Some(r) {
                *entry = None;
            }
        }
    }
    events
        .iter()
        .map(|e| {
            let pid = e.pid.or_else(|| e.failure.as_ref()?.dist.as_ref()?.pid());
            let single = e.failure.as_ref().and_then(|f| match &f.dist {
                Some(Dist::JaxTasks { tasks, .. }) if tasks.len() == 1 => Some(tasks[0]),
                _ => None,
            });
            e.rank
                .or_else(|| pid.and_then(|p| by_pid.get(&p).copied()))
                .or_else(|| {
                    e.local_rank
                        .and_then(|l| by_local.get(&l).copied().flatten())
                })
                .or(single)
                .map(Who::Rank)
                .or(e.local_rank.map(Who::Local))
                .or(pid.map(Who::Pid))
                .unwrap_or(Who::Unknown)
        })
        .collect()
}

/// How telling an event is of its rank's end (the one kept per rank).
fn weight(e: &RankEvent) -> u8 {
    match e.failure.as_ref().map(|f| &f.dist) {
        None => 1,
        Some(None) => 10,
        Some(Some(d)) => match d {
            Dist::WatchdogTimeout { .. } => 8,
            Dist::NcclError { .. } | Dist::JaxFatal => 7,
            Dist::JaxTasks { .. } => 6,
            Dist::Torchrun { .. } => 5,
            Dist::AgentFailed { .. } | Dist::DeepspeedExit { .. } | Dist::SrunTasks { .. } => 4,
            Dist::Stopped { .. } => 3,
            Dist::StepCancelled { .. } => 2,
        },
    }
}

/// Whether the event says its rank died of SIGABRT.
fn aborted(e: &RankEvent) -> bool {
    match e.failure.as_ref().and_then(|f| f.dist.as_ref()) {
        Some(Dist::Torchrun {
            signal, exitcode, ..
        }) => signal.as_deref() == Some("SIGABRT") || *exitcode == Some(-6),
        Some(Dist::AgentFailed { exitcode, .. }) => *exitcode == -6,
        Some(Dist::DeepspeedExit { code }) => *code == -6,
        Some(Dist::SrunTasks { how, .. }) => how.contains("Abort"),
        _ => false,
    }
}

fn is_watchdog(e: &RankEvent) -> bool {
    matches!(
        e.failure.as_ref().and_then(|f| f.dist.as_ref()),
        Some(Dist::WatchdogTimeout { .. })
    )
}

/// Judges a job's events, in the order read.
pub fn judge(events: &[RankEvent]) -> Verdict {
    let who = whom(events);
    let roles: Vec<Role> = events.iter().map(role).collect();
    // The rank a launcher names, the most authoritative first.
    let mut named: Vec<(u8, usize)> = roles
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match r {
            Role::Named(s) if who[i] != Who::Unknown => Some((*s, i)),
            _ => None,
        })
        .collect();
    named.sort_by_key(|(s, i)| (std::cmp::Reverse(*s), *i));
    let own = roles
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match r {
            Role::Own(s) => Some((*s, i)),
            _ => None,
        })
        .max_by_key(|(s, i)| {
            let named_rank = named.iter().any(|(_, n)| who[*n] == who[*i]);
            (*s, named_rank, std::cmp::Reverse(*i))
        });
    // A rank named as failed that waited itself, or aborted (SIGABRT: how NCCL's watchdog takes
    // a process down) while others' watchdogs fired, failed of the timeout like them.
    let any_watchdog = events.iter().any(is_watchdog);
    let root = own.map(|(_, i)| (i, Known::Own)).or_else(|| {
        named
            .iter()
            .find(|(_, n)| {
                let waited = events
                    .iter()
                    .zip(&who)
                    .any(|(e, w)| *w == who[*n] && is_watchdog(e));
                let timed_out = any_watchdog && aborted(&events[*n]);
                !(waited || timed_out)
            })
            .map(|(_, n)| (*n, Known::Named))
    });
    let root = root.or_else(|| {
        // Live: the process that ended first, with no line, before another rank's failure.
        let first_line = events
            .iter()
            .filter(|e| e.failure.is_some())
            .map(|e| e.at_ms)
            .min()?;
        let ended = events
            .iter()
            .enumerate()
            .filter(|(i, e)| {
                e.failure.is_none() && e.at_ms <= first_line && who[*i] != Who::Unknown
            })
            .min_by_key(|(i, e)| (e.at_ms, *i))?;
        let others_failed = events
            .iter()
            .enumerate()
            .any(|(i, e)| e.failure.is_some() && who[i] != who[ended.0]);
        others_failed.then_some((ended.0, Known::Exited))
    });
    let root_who = root.map(|(i, _)| who[i]);
    let naming: Vec<usize> = match root {
        Some((r, _)) => (0..events.len())
            .filter(|i| *i != r && Some(who[*i]) == root_who && who[*i] != Who::Unknown)
            .filter(|i| matches!(roles[*i], Role::Named(_)))
            .collect(),
        None => Vec::new(),
    };
    // One event per other rank, its most telling; those about no one rank each.
    let mut best: BTreeMap<Who, usize> = BTreeMap::new();
    let mut loose = Vec::new();
    for (i, w) in who.iter().enumerate() {
        if root.is_some_and(|(r, _)| r == i) || (Some(*w) == root_who && *w != Who::Unknown) {
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
    let no_root = if root.is_some() {
        None
    } else if let Some(i) = events.iter().position(is_watchdog) {
        Some(NoRoot::Timeout(i))
    } else if let Some(i) = events.iter().position(|e| {
        matches!(
            e.failure.as_ref().and_then(|f| f.dist.as_ref()),
            Some(Dist::NcclError {
                cause: NcclCause::Remote,
                ..
            })
        )
    }) {
        Some(NoRoot::PeerLost(i))
    } else {
        Some(NoRoot::Stopped)
    };
    Verdict {
        root,
        naming,
        followed,
        no_root,
    }
}
