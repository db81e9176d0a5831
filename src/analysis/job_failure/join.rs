//! Which process a rank's line is: a failure read from a log with a rank (its `[rankN]:` prefix,
//! or the event's own words) and no pid (a log several processes share) is joined to the process
//! of that rank among those writing the log, which must all be ranks of one job; exited ranks
//! count (the machine keeps their tracks a while). A launcher's line that names a pid (torchrun's
//! summary, its `closing signal` line) is joined by the pid, if that process is a rank of the job.
//!
//! A line with no rank at all is joined by its writer's probe (`counted`).
//!
//! Never a wrong join: when no process has the rank, two claim it, the writers are ranks of
//! several jobs or of none, or the line says one rank and its one writer is another, the failure
//! stays unjoined and the reason is said.

use std::collections::BTreeSet;

use crate::model::Machine;
use crate::oom::dist::Dist;
use crate::oom::failure::Failure;
use crate::oom::prefix::MAX_RANK;
use crate::sample::Rank;

/// Where a failure belongs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// Its process.
    pub pid: Option<u32>,
    /// The job its log's writers (or its process) are ranks of.
    pub job: Option<String>,
    /// Its global rank, where known.
    pub rank: Option<u32>,
    /// Why its rank was not joined to a process.
    pub unjoined: Option<String>,
}

/// The rank a line names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Global(u32),
    Local(u32),
}

impl Want {
    fn label(self) -> String {
        match self {
            Want::Global(r) => format!("rank {r}"),
            Want::Local(l) => format!("local rank {l}"),
        }
    }

    fn matches(self, r: &Rank) -> bool {
        match self {
            Want::Global(n) => r.rank == Some(n),
            Want::Local(n) => r.local_rank == Some(n),
        }
    }
}

/// The failures with the pid of the rank their line names, where it joins.
pub fn attribute(machine: &Machine, mut failures: Vec<Failure>) -> Vec<Failure> {
    for f in &mut failures {
        if f.pid.is_none() && (f.rank.is_some() || f.local_rank.is_some() || f.dist.is_some()) {
            f.pid = place(machine, f).pid;
        } else if let Some(p) = super::counted::counted_by(machine, f) {
            f.pid = Some(p);
        }
    }
    failures
}

fn pids(set: &BTreeSet<u32>) -> String {
    let v: Vec<String> = set.iter().map(|p| format!("pid {p}")).collect();
    v.join(", ")
}

/// Where `f` belongs on `machine`.
pub fn place(machine: &Machine, f: &Failure) -> Place {
    let rank_of = |pid: u32| {
        machine
            .processes
            .values()
            .filter(|t| t.sample.pid == pid)
            .find_map(|t| t.sample.rank.as_ref())
    };
    // Could `pid` have written a line read at `f.at_ms`? Not if it ended long before.
    let long_gone = |pid: u32| {
        let mut tracks = machine.processes.values().filter(|t| t.sample.pid == pid);
        tracks.clone().next().is_some()
            && tracks.all(|t| super::counted::gone_before(machine, t, f.at_ms))
    };
    // The log's one writer printed the line; it is the line's subject unless the line is a
    // launcher's or a peer's word on another rank.
    let owner = f
        .pid
        .filter(|_| f.dist.as_ref().is_none_or(Dist::about_printer));
    let writers: BTreeSet<u32> = machine
        .processes
        .values()
        .filter(|t| t.sample.log.value().is_some_and(|l| l.contains(&f.log)))
        .map(|t| t.sample.pid)
        .chain(f.pid)
        .collect();
    let jobs: BTreeSet<Option<&str>> = writers
        .iter()
        .map(|p| rank_of(*p).and_then(|r| r.job.as_deref()))
        .collect();
    let job = match jobs.iter().collect::<Vec<_>>().as_slice() {
        [Some(j)] => Some(j.to_string()),
        _ => None,
    };
    // A launcher's line that names the process.
    if let Some(p) = f.dist.as_ref().and_then(Dist::pid)
        && let Some(r) = rank_of(p).filter(|r| r.job.is_some())
        && (job.is_none() || r.job == job)
    {
        if let Some(n) = f.rank.filter(|n| r.rank != Some(*n)) {
            return Place {
                pid: None,
                job: r.job.clone(),
                rank: Some(n),
                unjoined: Some(format!(
                    "the line says pid {p} is rank {n}, but pid {p} is {}",
                    r.rank.map_or_else(
                        || "a rank gpumon could not trust".into(),
                        |m| format!("rank {m}")
                    )
                )),
            };
        }
        return Place {
            pid: Some(p),
            job: r.job.clone(),
            rank: r.rank,
            unjoined: None,
        };
    }
    let want = f.rank.map(Want::Global).or(f.local_rank.map(Want::Local));
    let Some(want) = want else {
        let unjoined = f.prefix.as_ref().map(|p| {
            format!("its prefix {p} names no rank gpumon believes (a number above {MAX_RANK})")
        });
        return Place {
            pid: owner,
            job,
            rank: owner.and_then(rank_of).and_then(|r| r.rank),
            unjoined,
        };
    };
    let global = match want {
        Want::Global(r) => Some(r),
        Want::Local(_) => None,
    };
    let Some(j) = job else {
        let why = if writers.is_empty() {
            format!("no process gpumon watches writes {}", f.log)
        } else if jobs.len() == 1 {
            format!(
                "the processes writing {} ({}) are not ranks of a distributed job",
                f.log,
                pids(&writers)
            )
        } else if jobs.contains(&None) {
            format!(
                "the processes writing {} ({}) are not all ranks of one job",
                f.log,
                pids(&writers)
            )
        } else {
            let named: Vec<&str> = jobs.iter().flatten().copied().collect();
            format!(
                "the processes writing {} belong to several jobs ({})",
                f.log,
                named.join(", ")
            )
        };
        return Place {
            pid: owner,
            job: None,
            rank: global,
            unjoined: Some(format!(
                "{} was not joined to a process: {why}",
                want.label()
            )),
        };
    };
    let candidates: BTreeSet<u32> = writers
        .iter()
        .copied()
        .filter(|p| !long_gone(*p))
        .filter(|p| {
            rank_of(*p).is_some_and(|r| r.job.as_deref() == Some(j.as_str()) && want.matches(r))
        })
        .collect();
    let unjoined = |why: String| Place {
        pid: None,
        job: Some(j.clone()),
        rank: global,
        unjoined: Some(format!(
            "{} was not joined to a process: {why}",
            want.label()
        )),
    };
    match candidates.iter().copied().collect::<Vec<u32>>().as_slice() {
        [c] => Place {
            pid: Some(*c),
            rank: rank_of(*c).and_then(|r| r.rank),
            job: Some(j),
            unjoined: None,
        },
        [] => match owner {
            Some(o) => unjoined(format!(
                "{}'s one writer, pid {o}, is {}",
                f.log,
                rank_of(o).and_then(|r| r.rank).map_or_else(
                    || "a rank gpumon could not trust".into(),
                    |r| format!("rank {r}")
                )
            )),
            None => {
                let mut ranks: Vec<String> = writers
                    .iter()
                    .filter_map(|p| rank_of(*p)?.rank)
                    .map(|r| r.to_string())
                    .collect();
                ranks.sort();
                ranks.dedup();
                unjoined(format!(
                    "no process writing {} is {} of job {j} (its ranks there: {})",
                    f.log,
                    want.label(),
                    if ranks.is_empty() {
                        "none".into()
                    } else {
                        ranks.join(", ")
                    }
                ))
            }
        },
        _ => unjoined(format!("{} all say {}", pids(&candidates), want.label())),
    }
}

#[cfg(test)]
mod tests;
