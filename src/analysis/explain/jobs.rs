//! `explain`'s job section: when the logs given carry ranks (`[rankN]:` prefixes, `[Rank N]` in
//! a watchdog's line, torchrun's summary, srun's tasks) or a distributed job's events, they are
//! read as one job's logs (rank0.log rank1.log … as srun leaves them, or torchrun's one log) and
//! judged as live alerts are (`job_failure::judge`): the rank that failed first, its class and
//! remedy, and the other ranks' failures as consequences. Ranks come from the lines alone, never
//! from file names; a line without one takes its file's rank when every ranked line of that file
//! says the same rank.

use std::collections::BTreeMap;

use serde::Serialize;

use super::Explained;
use crate::analysis::job_failure::judge::{self, Known, NoRoot, Who};
use crate::analysis::job_failure::words;
use crate::model::RankEvent;
use crate::oom::dist::Dist;
use crate::oom::failure::Failure;

/// A rank's event as explain shows it.
#[derive(Debug, Serialize)]
pub struct Said {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_rank: Option<u32>,
    pub log: String,
    pub line: u64,
    /// The event's kind (`watchdog_timeout`, `torchrun`, …); absent for an OOM or a fault.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub words: String,
}

/// The root cause.
#[derive(Debug, Serialize)]
pub struct Root {
    #[serde(flatten)]
    pub said: Said,
    /// An OOM's or a memory fault's class, when its own line says it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// `certain`, or `likely`.
    pub confidence: String,
}

/// One job's failure in the logs given (the JSON shape of `job_failures`).
#[derive(Debug, Serialize)]
pub struct JobExplained {
    /// `root-cause` (a rank's own failure), `rank-failed` (a launcher names it),
    /// `collective-timeout`, `peer-lost` or `rank-stopped` (no rank seen failing first).
    pub finding: String,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<Root>,
    /// Other lines that name the root cause's rank (torchrun's summary, its agent).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub named_by: Vec<Said>,
    /// One event per other rank (its most telling), then those about no one rank; with no root
    /// cause, every rank's.
    pub consequences: Vec<Said>,
    pub remedy: String,
}

fn kind(f: &Failure) -> Option<String> {
    let d = f.dist.as_ref()?;
    let v = serde_json::to_value(d).ok()?;
    v.get("kind")?.as_str().map(str::to_string)
}

/// An event of no known rank said of its writer: its log says which process that is, not how
/// many write it ("a process writing train.log ran out of memory").
fn by_log(words: String, who: Who, e: &RankEvent) -> String {
    match (who, e.failure.as_ref(), words.strip_prefix("a rank ")) {
        (Who::Unknown, Some(f), Some(rest)) => format!("a process writing {} {rest}", f.log),
        _ => words,
    }
}

/// Whether a failure's rank is the rank of the process that wrote its line.
fn writers_rank(f: &Failure) -> Option<u32> {
    match f.dist {
        None | Some(Dist::WatchdogTimeout { .. } | Dist::NcclError { .. }) => f.rank,
        _ if f.prefix.is_some() => f.rank,
        _ => None,
    }
}

/// The job section of `failures` (all the logs' failures, in order read), with the
/// classification of the OOMs and faults among them (`explained`, by log and line).
pub fn section(failures: &[Failure], explained: &[Explained]) -> Option<JobExplained> {
    let ranked = failures.iter().any(|f| {
        f.rank.is_some() || f.local_rank.is_some() || f.dist.is_some() || f.prefix.is_some()
    });
    if !ranked {
        return None;
    }
    // Each file's rank, where all its ranked lines say one.
    let mut file_rank: BTreeMap<&str, Option<u32>> = BTreeMap::new();
    for f in failures {
        if let Some(r) = writers_rank(f) {
            let e = file_rank.entry(f.log.as_str()).or_insert(Some(r));
            if *e != Some(r) {
                *e = None;
            }
        }
    }
    let events: Vec<RankEvent> = failures
        .iter()
        .map(|f| RankEvent {
            pid: None,
            rank: f.rank.or_else(|| {
                (f.dist.is_none() && f.local_rank.is_none())
                    .then(|| file_rank.get(f.log.as_str()).copied().flatten())
                    .flatten()
            }),
            local_rank: f.local_rank,
            at_ms: 0,
            failure: Some(f.clone()),
            unjoined: None,
        })
        .collect();
    let v = judge::judge(&events);
    let who = judge::whom(&events);
    let class_of = |f: &Failure| {
        explained
            .iter()
            .find(|x| x.log == f.log && x.line == f.line)
    };
    let at = |e: &RankEvent| {
        let f = e.failure.as_ref();
        let place = f.map_or_else(String::new, |f| format!("{}:{}", f.log, f.line));
        match f.and_then(|f| f.dist.as_ref()).and_then(Dist::time) {
            Some(t) => format!(" at {t} ({place})"),
            None => format!(" ({place})"),
        }
    };
    let said = |i: usize, words: String| {
        let e = &events[i];
        let f = e.failure.as_ref();
        Said {
            rank: match who[i] {
                Who::Rank(r) => Some(r),
                _ => None,
            },
            local_rank: e.local_rank,
            log: f.map_or_else(String::new, |f| f.log.clone()),
            line: f.map_or(0, |f| f.line),
            kind: f.and_then(kind),
            words,
        }
    };
    let root_phrase = v.root.map(|(i, _)| {
        format!(
            "{}{}",
            words::root_phrase(&events[i], who[i]),
            at(&events[i])
        )
    });
    let consequences: Vec<Said> = v
        .followed
        .iter()
        .map(|i| {
            let e = &events[*i];
            let class = e
                .failure
                .as_ref()
                .and_then(class_of)
                .map(|x| x.class.as_str());
            let words = by_log(words::words(e, who[*i], &at(e), class), who[*i], e);
            let words = words::against_root(words, judge::role(e), root_phrase.as_deref());
            said(*i, words)
        })
        .collect();
    let named_by: Vec<Said> = v
        .naming
        .iter()
        .map(|i| {
            said(
                *i,
                words::words(&events[*i], who[*i], &at(&events[*i]), None),
            )
        })
        .collect();
    // Ranks that followed: with the root cause's rank unknown, a line naming a rank as failed
    // may name the root cause itself (JAX's coordination service naming the task that died).
    let root_unknown = v.root.is_some_and(|(i, _)| who[i] == Who::Unknown);
    let n = v
        .followed
        .iter()
        .filter(|i| !(root_unknown && matches!(judge::role(&events[**i]), judge::Role::Named(_))))
        .count();
    let followed = match n {
        0 => String::new(),
        1 => "; 1 rank followed".into(),
        _ => format!("; {n} ranks followed"),
    };
    let after = if n > 0 {
        " The other ranks failed because it did: they need no fix of their own."
    } else {
        ""
    };
    let (finding, title, root, remedy) = match v.root {
        Some((i, known)) => {
            let e = &events[i];
            let f = e.failure.as_ref();
            let x = f.and_then(class_of).filter(|_| known == Known::Own);
            let label = match who[i] {
                Who::Unknown => format!("a process writing {}", f.map_or("", |f| f.log.as_str())),
                w => w.label(),
            };
            let (finding, what, confidence, remedy) = match x {
                Some(x) => (
                    "root-cause",
                    format!(
                        "{} {} ({})",
                        x.source.map_or("GPU", crate::oom::failure::Dialect::label),
                        x.class,
                        x.confidence.as_str()
                    ),
                    x.confidence.as_str().to_string(),
                    x.remedy.clone(),
                ),
                None => (
                    "rank-failed",
                    "its launcher names it".to_string(),
                    "certain".to_string(),
                    format!(
                        "Read {label}'s own output for its error (its traceback, or the kernel log if it was killed: dmesg) and fix that."
                    ),
                ),
            };
            let words = by_log(
                words::words(e, who[i], &at(e), x.map(|x| x.class.as_str())),
                who[i],
                e,
            );
            let root = Root {
                said: said(i, words),
                class: x.map(|x| x.class.clone()),
                confidence,
            };
            (
                finding,
                format!("{label} failed first: {what}{followed}"),
                Some(root),
                format!("{remedy}{after}"),
            )
        }
        None => {
            let (finding, title, remedy) = match v.no_root.unwrap_or(NoRoot::Stopped) {
                NoRoot::Timeout(i) => (
                    "collective-timeout",
                    format!(
                        "{}, and no rank was seen failing: a rank stuck or slow, not dead",
                        words::words(&events[i], who[i], "", None)
                    ),
                    "Find the rank that never reached that collective: run with TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 so each rank dumps its collectives (torchfrtrace names the missing ranks); raise the timeout only for work one rank legitimately does alone (a checkpoint, an evaluation).",
                ),
                NoRoot::PeerLost(i) => (
                    "peer-lost",
                    format!(
                        "{}, and no rank was seen failing: the failed rank's output is not among these logs",
                        words::words(&events[i], who[i], "", None)
                    ),
                    "Read the other ranks' output (another node's, perhaps) for the first failure; if none failed, check the network between them (NCCL_DEBUG=INFO).",
                ),
                NoRoot::Stopped => (
                    "rank-stopped",
                    "ranks ended, and no rank was seen failing first".to_string(),
                    "Read the ranks' own output and the launcher's for the first failure.",
                ),
            };
            (finding, title, None, remedy.to_string())
        }
    };
    Some(JobExplained {
        finding: finding.into(),
        title,
        root,
        named_by,
        consequences,
        remedy,
    })
}

/// The section as text, within `explain`'s 80 columns.
pub fn text(job: &JobExplained, logs: usize, wrap: impl Fn(&str, &str, &str) -> String) -> String {
    let mut out = wrap(
        &format!(
            "job failure ({} log(s) read as one job's): {}",
            logs, job.title
        ),
        "",
        "  ",
    );
    if let Some(r) = &job.root {
        out.push_str(&wrap(&r.said.words, "  root cause: ", "    "));
    }
    for s in &job.named_by {
        out.push_str(&wrap(&s.words, "  - ", "    "));
    }
    for s in &job.consequences {
        out.push_str(&wrap(&s.words, "  - ", "    "));
    }
    out.push_str(&wrap(&job.remedy, "  remedy: ", "    "));
    out
}
