//! Which of the logs `explain` was given are one job's: logs are read together only where their
//! lines show it, and apart where anything says otherwise. Apart: both logs are written by the
//! same rank (each line of theirs says it: two rank 0s are two jobs), their watchdogs' timeouts
//! differ (one job sets one), their collectives' numbers are far apart, or Slurm names other
//! steps. Together: the same collective timed out in both (its op and number within a few), the
//! same Slurm step, a pid one log's launcher names and the other's writes; or one folder (as srun
//! leaves `rank0.log rank1.log`, JAX `process0.log process1.log`) and nothing that says apart.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::oom::dist::Dist;
use crate::oom::failure::Failure;

/// Collective numbers of one job's timeouts are this close (a rank behind is one or two back).
const SEQ_NEAR: u64 = 16;

/// One job's logs, and why they were read together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub logs: Vec<String>,
    pub why: String,
}

/// What one log says of its job.
#[derive(Debug, Default)]
struct Evidence {
    folder: String,
    /// Ranks whose own lines (prefix or own event) the log holds.
    writers: BTreeSet<u32>,
    timeouts: BTreeSet<u64>,
    /// (op, collective number) of its watchdog timeouts.
    seqs: BTreeSet<(String, u64)>,
    steps: BTreeSet<String>,
    pids: BTreeSet<u32>,
}

fn evidence(log: &str, failures: &[Failure]) -> Evidence {
    let mut ev = Evidence {
        folder: Path::new(log)
            .parent()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default(),
        ..Evidence::default()
    };
    for f in failures.iter().filter(|f| f.log == log) {
        let own_line = f.prefix.is_some()
            || matches!(
                f.dist,
                None | Some(Dist::WatchdogTimeout { .. } | Dist::NcclError { .. })
            );
        if let (Some(r), true) = (f.rank, own_line) {
            ev.writers.insert(r);
        }
        match &f.dist {
            Some(Dist::WatchdogTimeout {
                op,
                seq,
                timeout_ms,
                ..
            }) => {
                ev.timeouts.insert(*timeout_ms);
                ev.seqs.insert((op.clone(), *seq));
            }
            Some(Dist::StepCancelled { step, .. }) => {
                ev.steps
                    .insert(step.split('.').next().unwrap_or(step).to_string());
            }
            Some(d) => ev.pids.extend(d.pid()),
            None => {}
        }
    }
    ev
}

/// Why two logs cannot be one job's, if anything says so.
fn apart(a: &Evidence, b: &Evidence) -> Option<String> {
    if let Some(r) = a.writers.intersection(&b.writers).next() {
        return Some(format!("both are written by a rank {r}"));
    }
    if !a.timeouts.is_empty() && !b.timeouts.is_empty() && a.timeouts.is_disjoint(&b.timeouts) {
        return Some("their collectives' timeouts differ".into());
    }
    let far = !a.seqs.is_empty()
        && !b.seqs.is_empty()
        && !a.seqs.iter().any(|(op, s)| {
            b.seqs
                .iter()
                .any(|(o, t)| o == op && s.abs_diff(*t) <= SEQ_NEAR)
        });
    if far {
        return Some("their timed-out collectives are not the same".into());
    }
    if !a.steps.is_empty() && !b.steps.is_empty() && a.steps.is_disjoint(&b.steps) {
        return Some("Slurm names other jobs".into());
    }
    None
}

/// Why two logs are one job's, where their lines show it.
fn together(a: &Evidence, b: &Evidence) -> Option<&'static str> {
    let same_collective = a.seqs.iter().any(|(op, s)| {
        b.seqs
            .iter()
            .any(|(o, t)| o == op && s.abs_diff(*t) <= SEQ_NEAR)
    });
    if same_collective {
        return Some("the same collective timed out in each");
    }
    if !a.steps.is_disjoint(&b.steps) {
        return Some("the same Slurm job");
    }
    if !a.pids.is_disjoint(&b.pids) {
        return Some("a launcher names the same processes");
    }
    let ranks = !a.writers.is_empty() && !b.writers.is_empty();
    match (a.folder == b.folder, ranks) {
        (true, true) => Some("one folder, each a different rank's"),
        (true, false) => Some("one folder, and nothing in them says apart"),
        _ => None,
    }
}

/// The logs with distributed events grouped into jobs, in the order given.
pub fn group(failures: &[Failure]) -> Vec<Group> {
    let mut logs: Vec<String> = Vec::new();
    for f in failures {
        if !logs.contains(&f.log) {
            logs.push(f.log.clone());
        }
    }
    let ev: Vec<Evidence> = logs.iter().map(|l| evidence(l, failures)).collect();
    // Each log joins the first group it is shown to belong to and none of whose logs is apart.
    let mut groups: Vec<(Vec<usize>, BTreeSet<&'static str>)> = Vec::new();
    let mut apart_said: BTreeMap<usize, String> = BTreeMap::new();
    for i in 0..logs.len() {
        let mut joined = false;
        for (members, why) in &mut groups {
            let against = members.iter().find_map(|m| apart(&ev[*m], &ev[i]));
            if let Some(reason) = against {
                apart_said
                    .entry(i)
                    .or_insert(format!("read apart from {}: {reason}", logs[members[0]]));
                continue;
            }
            if let Some(w) = members.iter().find_map(|m| together(&ev[*m], &ev[i])) {
                members.push(i);
                why.insert(w);
                joined = true;
                break;
            }
        }
        if !joined {
            groups.push((vec![i], BTreeSet::new()));
        }
    }
    groups
        .into_iter()
        .map(|(members, why)| {
            let names: Vec<String> = members.iter().map(|m| logs[*m].clone()).collect();
            let why = if members.len() == 1 {
                let alone = apart_said
                    .get(&members[0])
                    .cloned()
                    .unwrap_or_else(|| "nothing shows another log is this job's".into());
                format!("{} alone ({alone})", names[0])
            } else {
                let reasons: Vec<&str> = why.into_iter().collect();
                format!("{} as one job's ({})", names.join(", "), reasons.join("; "))
            };
            Group { logs: names, why }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oom(log: &str, rank: u32) -> Failure {
        Failure {
            at_ms: 0,
            log: log.into(),
            line: 1,
            pid: None,
            message: "CUDA out of memory".into(),
            source: None,
            allocator: None,
            numbers: Default::default(),
            fault: None,
            rank: Some(rank),
            local_rank: None,
            prefix: Some(format!("[rank{rank}]:")),
            ..Failure::default()
        }
    }

    fn watchdog(log: &str, rank: u32, seq: u64, timeout_ms: u64) -> Failure {
        Failure {
            dist: Some(Dist::WatchdogTimeout {
                op: "ALLREDUCE".into(),
                seq,
                timeout_ms,
                ran_ms: None,
                time: None,
            }),
            ..oom(log, rank)
        }
    }

    #[test]
    fn two_jobs_given_together_are_kept_apart() {
        // A two-rank job's logs and two of an eight-rank job's (another timeout, other
        // collectives, a rank 0 of its own).
        let f = vec![
            oom("two/rank0.log", 0),
            watchdog("two/rank1.log", 1, 3067, 40_000),
            watchdog("eight/rank0.log", 0, 1580, 600_000),
            oom("eight/rank3.log", 3),
        ];
        let g = group(&f);
        assert_eq!(g.len(), 2, "{g:#?}");
        assert_eq!(g[0].logs, vec!["two/rank0.log", "two/rank1.log"]);
        assert_eq!(g[1].logs, vec!["eight/rank0.log", "eight/rank3.log"]);
        assert!(g[0].why.contains("one folder"), "{}", g[0].why);
    }

    #[test]
    fn the_same_collective_joins_logs_of_other_folders_and_a_shared_rank_keeps_them_apart() {
        let f = vec![
            watchdog("a/x.log", 0, 203, 60_000),
            watchdog("b/y.log", 1, 203, 60_000),
            oom("c/z.log", 1),
        ];
        let g = group(&f);
        assert_eq!(g.len(), 2, "{g:#?}");
        assert!(g[0].why.contains("the same collective"), "{}", g[0].why);
        assert_eq!(g[1].logs, vec!["c/z.log"]);
        assert!(
            g[1].why.contains("both are written by a rank 1"),
            "{}",
            g[1].why
        );
    }
}
