//! What each event of a job's end says: whom it is about (`whom`), its role (`role`: the rank's
//! own failure, a launcher naming a rank, a stop from outside, a failure survived, a normal end,
//! a consequence), and the story they tell together (`Story`, decided in `story.rs`). Pure, on
//! `RankEvent`s: the live alert and `explain` (which builds events from the lines alone) judge
//! alike.

use std::collections::BTreeMap;

use crate::model::{Ending, RankEvent};
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
    /// The rank's own failure; the higher, the surer the cause (an OOM or a memory fault, its
    /// own line or its probe's record of the exception, 2; a CUDA error inside NCCL or another
    /// uncaught exception 1; a non-zero exit status of its own 0).
    Own(u8),
    /// A launcher or a peer names the rank as failed; the higher, the more authoritative.
    Named(u8),
    /// The launcher or the scheduler was stopped from outside (a signal, a time limit, a
    /// cancellation, a preemption).
    Outside,
    /// An allocation failure the process ran on after.
    Survived,
    /// The process ended normally (status 0), by its probe's record.
    Normal,
    /// The process ended through the interpreter, its status unknown (a normal end, or a
    /// `sys.exit(1)` after an error it caught): never a root cause, and after one never called
    /// its consequence outright.
    Exited,
    /// The rank waited, lost its peer, was stopped, or ended with no line.
    Followed,
}

/// Whether Slurm's cancellation came from outside the job (a time limit, a preemption, a node
/// failure, `scancel`) rather than from one of its tasks failing.
fn cancelled_from_outside(due: Option<&str>) -> bool {
    !due.is_some_and(|d| d.contains("TASK FAILURE"))
}

pub fn role(e: &RankEvent) -> Role {
    let Some(f) = &e.failure else {
        return match &e.ending {
            Some(Ending::Exit { code: Some(0) }) => Role::Normal,
            Some(Ending::Exit { code: None }) => Role::Exited,
            Some(Ending::Exit { code: Some(_) }) => Role::Own(0),
            Some(end) if end.raised_oom() => Role::Own(2),
            Some(end @ Ending::Raised { .. }) if !end.raised_by_peers() => Role::Own(1),
            _ => Role::Followed,
        };
    };
    match &f.dist {
        None if e.survived => Role::Survived,
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
        Some(Dist::LauncherSignalled { .. }) => Role::Outside,
        Some(Dist::StepCancelled { due, .. }) if cancelled_from_outside(due.as_deref()) => {
            Role::Outside
        }
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

/// The story a job's end tells.
#[derive(Debug, Clone, PartialEq)]
pub enum Story {
    /// One rank failed first (`root`, and how it is known); the others followed.
    Cascade { root: usize, known: Known },
    /// Several ranks failed of their own, alike and within seconds of each other (each rank's
    /// own failure, the first first): one cause in code every rank runs.
    Common { own: Vec<usize> },
    /// Ranks timed out on a collective (`timeout`: the first such event) that the ranks
    /// `behind` never reached, by their own count.
    Stuck { behind: Vec<usize>, timeout: usize },
    /// The launcher or the scheduler was stopped from outside (`stop`): no rank failed.
    Outside { stop: usize },
    /// Allocation failures the processes ran on after (`own`): nothing ended the job.
    Survived { own: Vec<usize> },
    /// No rank seen failing first: what the events say instead.
    NoRoot(NoRoot),
}

/// A job's events judged.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub story: Story,
    /// Other events that name the root cause's rank (a launcher confirming it).
    pub naming: Vec<usize>,
    /// The consequences: one event per other rank (its most telling), then those about no one
    /// rank, in the order read.
    pub followed: Vec<usize>,
    /// Ranks that ended normally or ran on after a failure: never consequences.
    pub normal: Vec<usize>,
    /// Ranks that ended long after the story with no line of their own and no end record: how
    /// they ended is not known, and they are not called consequences.
    pub later: Vec<usize>,
}

impl Verdict {
    /// The root cause's event, and how it is known (a cascade's).
    pub fn root(&self) -> Option<(usize, Known)> {
        match self.story {
            Story::Cascade { root, known } => Some((root, known)),
            _ => None,
        }
    }

    /// How many other ranks followed: distinct ranks among the consequences; an event about no
    /// one rank counts as its log's writer, once a log, when its own words are about the
    /// process that printed it (a rank-less log is one process's output).
    pub fn followed_ranks(&self, events: &[RankEvent], who: &[Who]) -> usize {
        let ranks: std::collections::BTreeSet<(Who, &str)> = self
            .followed
            .iter()
            .filter_map(|i| match who[*i] {
                Who::Unknown => {
                    let f = events[*i].failure.as_ref()?;
                    f.dist
                        .as_ref()
                        .is_some_and(Dist::about_printer)
                        .then_some((Who::Unknown, f.log.as_str()))
                }
                w => Some((w, "")),
            })
            .collect();
        ranks.len()
    }
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
pub(super) fn weight(e: &RankEvent) -> u8 {
    match e.failure.as_ref().map(|f| &f.dist) {
        None => 1,
        Some(None) => 10,
        Some(Some(d)) => match d {
            Dist::WatchdogTimeout { .. } => 8,
            Dist::NcclError { .. } | Dist::JaxFatal => 7,
            Dist::JaxTasks { .. } => 6,
            Dist::Torchrun { .. } => 5,
            Dist::AgentFailed { .. } | Dist::DeepspeedExit { .. } | Dist::SrunTasks { .. } => 4,
            Dist::DumpSignal { .. } => 6,
            Dist::Stopped { .. } => 3,
            Dist::StepCancelled { .. } | Dist::LauncherSignalled { .. } => 2,
        },
    }
}

/// Whether the event says its rank died of SIGABRT.
pub(super) fn aborted(e: &RankEvent) -> bool {
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

pub(super) fn is_watchdog(e: &RankEvent) -> bool {
    matches!(
        e.failure.as_ref().and_then(|f| f.dist.as_ref()),
        Some(Dist::WatchdogTimeout { .. })
    )
}
