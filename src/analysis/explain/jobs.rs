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
use crate::analysis::job_failure::judge::{self, Known, Story, Who};
use crate::analysis::job_failure::tell::{self, Say};
use crate::analysis::job_failure::{story, words};

mod group;
mod say;

use crate::model::RankEvent;
use crate::oom::dist::Dist;
use crate::oom::failure::Failure;
use say::no_root_words;
pub use say::text;

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
    /// `root-cause` (a rank's own failure), `rank-failed` (a launcher names it), `common-cause`
    /// (several ranks' own failures alike), `rank-stuck`, `stopped-from-outside`, `survived`,
    /// `collective-timeout`, `peer-lost` or `rank-stopped` (no rank seen failing first).
    pub finding: String,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<Root>,
    /// Other lines that name the root cause's rank (torchrun's summary, its agent).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub named_by: Vec<Said>,
    /// A stuck rank's own count, the stop from outside, a failure survived: the story's own
    /// events where it has no root cause.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub told: Vec<Said>,
    /// One event per other rank (its most telling), then those about no one rank; with no root
    /// cause, every rank's.
    pub consequences: Vec<Said>,
    pub remedy: String,
    /// The logs read as this job's.
    pub logs: Vec<String>,
    /// Why they were read together (or why alone).
    pub read_together: String,
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

/// The job sections of `failures` (all the logs' failures, in order read), one per job the logs
/// can be shown to be (`group.rs`), with the classification of the OOMs and faults among them
/// (`explained`, by log and line).
pub fn sections(failures: &[Failure], explained: &[Explained]) -> Vec<JobExplained> {
    let ranked: Vec<&Failure> = failures
        .iter()
        .filter(|f| {
            f.rank.is_some() || f.local_rank.is_some() || f.dist.is_some() || f.prefix.is_some()
        })
        .collect();
    if ranked.is_empty() {
        return Vec::new();
    }
    let groups = group::group(failures);
    groups
        .into_iter()
        .filter_map(|g| {
            let mine: Vec<Failure> = failures
                .iter()
                .filter(|f| g.logs.contains(&f.log))
                .cloned()
                .collect();
            let mut job = section(&mine, explained)?;
            job.logs = g.logs;
            job.read_together = g.why;
            Some(job)
        })
        .collect()
}

/// One job's section.
fn section(failures: &[Failure], explained: &[Explained]) -> Option<JobExplained> {
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
            ending: None,
            survived: survived(f, failures),
        })
        .collect();
    let v = story::judge(&events);
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
    let label = |i: usize| match who[i] {
        Who::Unknown => format!(
            "a process writing {}",
            events[i].failure.as_ref().map_or("", |f| f.log.as_str())
        ),
        w => w.label(),
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
    let words_of = |i: usize| {
        let e = &events[i];
        let class = e
            .failure
            .as_ref()
            .and_then(class_of)
            .map(|x| x.class.as_str());
        by_log(words::words(e, who[i], &at(e), class), who[i], e)
    };
    let root_phrase = match &v.story {
        Story::Cascade { root, .. } => Some(format!(
            "{}{}",
            words::root_phrase(&events[*root], who[*root]),
            at(&events[*root])
        )),
        Story::Common { .. } => Some("the common cause".to_string()),
        Story::Stuck { behind, .. } => Some(format!(
            "{} never reaching the collective",
            who[behind[0]].label()
        )),
        Story::Outside { .. } => Some("the stop from outside".to_string()),
        _ => None,
    };
    let consequences: Vec<Said> = v
        .followed
        .iter()
        .map(|i| {
            let w = words::against_root(
                words_of(*i),
                judge::role(&events[*i]),
                root_phrase.as_deref(),
            );
            said(*i, w)
        })
        .chain(
            v.normal
                .iter()
                .map(|i| said(*i, format!("{}: not a consequence", words_of(*i)))),
        )
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
    let n = v.followed_ranks(&events, &who);
    let followed = match n {
        0 => String::new(),
        n => format!("; {} followed", tell::ranks_count(n)),
    };
    let all_followed = v
        .followed
        .iter()
        .all(|i| judge::role(&events[*i]) == judge::Role::Followed);
    let after = if n > 0 && all_followed {
        " The other ranks failed because it did: they need no fix of their own."
    } else {
        ""
    };
    let say = Say {
        events: &events,
        who: &who,
        label: &label,
        at: &at,
    };
    let classified = |i: usize| {
        let x = events[i].failure.as_ref().and_then(class_of)?;
        Some((
            format!(
                "{} {} ({})",
                x.source.map_or("GPU", crate::oom::failure::Dialect::label),
                x.class,
                x.confidence.as_str()
            ),
            x.class.clone(),
            x.confidence.as_str().to_string(),
            x.remedy.clone(),
        ))
    };
    let (finding, title, root, remedy, also) = match &v.story {
        Story::Cascade { root: i, known } => {
            let i = *i;
            let x = classified(i).filter(|_| *known == Known::Own);
            let (finding, what, confidence, remedy, class) = match x {
                Some((what, class, confidence, remedy)) => {
                    ("root-cause", what, confidence, remedy, Some(class))
                }
                None => (
                    "rank-failed",
                    "its launcher names it".to_string(),
                    "certain".to_string(),
                    format!(
                        "Read {}'s own output for its error (its traceback, or the kernel log if it was killed: dmesg) and fix that.",
                        label(i)
                    ),
                    None,
                ),
            };
            let root = Root {
                said: said(i, words_of(i)),
                class,
                confidence,
            };
            (
                finding.to_string(),
                format!("{} failed first: {what}{followed}", label(i)),
                Some(root),
                format!("{remedy}{after}"),
                Vec::new(),
            )
        }
        Story::Common { own } => {
            let (head, tail) = tell::common_head(&say, own);
            let x = classified(own[0]);
            let root = Root {
                said: said(own[0], words_of(own[0])),
                class: x.as_ref().map(|x| x.1.clone()),
                confidence: x.as_ref().map_or_else(|| "likely".into(), |x| x.2.clone()),
            };
            let also: Vec<Said> = own[1..].iter().map(|i| said(*i, words_of(*i))).collect();
            (
                "common-cause".to_string(),
                match &x {
                    Some(x) => format!("{head}: {}", x.0),
                    None => head,
                },
                Some(root),
                format!(
                    "{}{tail}",
                    x.map_or_else(
                        || "Read one rank's traceback: the same error ended every one.".into(),
                        |x| x.3
                    )
                ),
                also,
            )
        }
        Story::NoRoot(no_root) => {
            let (finding, title, remedy) = no_root_words(*no_root, &events, &who);
            (
                finding.to_string(),
                title,
                None,
                remedy.to_string(),
                Vec::new(),
            )
        }
        _ => {
            let t = tell::told(&say, &v)?;
            let told: Vec<usize> = match &v.story {
                Story::Stuck { behind, .. } => behind.clone(),
                Story::Outside { stop } => vec![*stop],
                Story::Survived { own } => own.clone(),
                _ => Vec::new(),
            };
            let told = told.iter().map(|i| said(*i, words_of(*i))).collect();
            (t.finding.to_string(), t.title, None, t.remedy, told)
        }
    };
    let (mut named_by, mut told) = (named_by, Vec::new());
    match v.story {
        Story::Common { .. } => named_by.extend(also),
        _ => told = also,
    }
    Some(JobExplained {
        finding,
        title,
        root,
        named_by,
        told,
        consequences,
        remedy,
        logs: Vec::new(),
        read_together: String::new(),
    })
}

/// Whether a failure is one its process ran on after, from the log alone: XLA's allocator's
/// warning (`Allocator (GPU_2_bfc) ran out of memory trying to allocate …`) logged again later in
/// the same log (the process went on to allocate again), and no exception anywhere in that log
/// (JAX raises one only when a failed result is read; the parser folds an exception that follows
/// a warning at once into the warning's failure, whose message then names it). One warning alone
/// tells nothing of what came after it.
pub(super) fn survived(f: &Failure, all: &[Failure]) -> bool {
    let same_log = || all.iter().filter(|g| g.log == f.log && g.dist.is_none());
    let raised = same_log().any(|g| {
        g.source == Some(crate::oom::failure::Dialect::Jax)
            || g.message.contains("RESOURCE_EXHAUSTED")
            || g.numbers.request.is_some() && !g.is_allocator_warning()
    });
    let warnings = same_log().filter(|g| g.is_allocator_warning()).count();
    f.is_allocator_warning() && warnings >= 2 && !raised
}
