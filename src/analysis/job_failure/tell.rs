//! Each story's sentences — its finding, title, confidence and remedy — said once for the live
//! alert (`render.rs`) and `explain` (`explain/jobs.rs`) alike. Each takes the job's events, whom
//! each is about, a way to name a rank (`label`: "rank 2", or "a process writing train.log") and
//! to say when an event happened (`at`: " at 18:21:37", or where it was read).

use super::judge::{Story, Verdict, Who};
use crate::model::RankEvent;
use crate::model::units::duration_ms;
use crate::oom::dist::Dist;

/// A story told: what `explain` calls its finding (the alert's class), its title, how sure,
/// and the remedy.
#[derive(Debug, Clone, PartialEq)]
pub struct Told {
    pub finding: &'static str,
    pub title: String,
    pub confidence: &'static str,
    pub remedy: String,
}

/// How to say an event's rank and time.
pub struct Say<'a> {
    pub events: &'a [RankEvent],
    pub who: &'a [Who],
    pub label: &'a dyn Fn(usize) -> String,
    pub at: &'a dyn Fn(&RankEvent) -> String,
}

impl Say<'_> {
    /// "ranks 0, 1 and 3", "rank 2": the ranks of `events`, in rank order, each once.
    pub fn ranks(&self, idx: &[usize]) -> String {
        let mut known: Vec<u32> = idx
            .iter()
            .filter_map(|i| match self.who[*i] {
                Who::Rank(r) => Some(r),
                _ => None,
            })
            .collect();
        known.sort_unstable();
        known.dedup();
        let other: Vec<String> = idx
            .iter()
            .filter(|i| !matches!(self.who[**i], Who::Rank(_)))
            .map(|i| (self.label)(*i))
            .collect();
        let mut parts: Vec<String> = known.iter().map(u32::to_string).collect();
        let head = match parts.len() {
            0 => String::new(),
            1 => format!("rank {}", parts[0]),
            _ => {
                let last = parts.pop().unwrap_or_default();
                format!("ranks {} and {last}", parts.join(", "))
            }
        };
        match (head.is_empty(), other.is_empty()) {
            (false, true) => head,
            (true, _) => other.join(", "),
            (false, false) => format!("{head}, {}", other.join(", ")),
        }
    }
}

/// "1 rank", "3 ranks".
pub fn ranks_count(n: usize) -> String {
    if n == 1 {
        "1 rank".into()
    } else {
        format!("{n} ranks")
    }
}

/// The story's sentences, for every story but a cascade (whose root's own failure is told by
/// its classification) and a common cause (likewise, with [`common_head`]).
pub fn told(say: &Say, v: &Verdict) -> Option<Told> {
    match &v.story {
        Story::Stuck { behind, timeout } => Some(stuck(say, v, behind, *timeout)),
        Story::Outside { stop } => Some(outside(say, v, *stop)),
        Story::Survived { own } => Some(survived(say, own)),
        _ => None,
    }
}

/// A common cause's title head and remedy tail: "ranks 0, 1, 2 and 3 each ran out of memory of
/// their own within 1s: one cause in code every rank runs".
pub fn common_head(say: &Say, own: &[usize]) -> (String, String) {
    let times: Vec<u64> = own.iter().map(|i| say.events[*i].at_ms).collect();
    let spread =
        times.iter().max().copied().unwrap_or(0) - times.iter().min().copied().unwrap_or(0);
    let within = if times.iter().all(|t| *t == 0) {
        String::new()
    } else {
        format!(" within {}", duration_ms(spread.max(1000)))
    };
    let what = match say.events[own[0]].failure.as_ref().and_then(|f| f.fault) {
        Some(k) => format!("died of {}", k.words()),
        None => "ran out of memory".into(),
    };
    (
        format!(
            "{} each {what} of their own{within}: one cause in code every rank runs",
            say.ranks(own)
        ),
        format!(
            " Every rank runs this code and failed of it: the fix is in that code, and it serves all {}.",
            ranks_count(own.len())
        ),
    )
}

fn stuck(say: &Say, v: &Verdict, behind: &[usize], timeout: usize) -> Told {
    let (op, seq, limit) = match say.events[timeout]
        .failure
        .as_ref()
        .and_then(|f| f.dist.as_ref())
    {
        Some(Dist::WatchdogTimeout {
            op,
            seq,
            timeout_ms,
            ..
        }) => (op.clone(), *seq, *timeout_ms),
        _ => (String::from("a collective"), 0, 0),
    };
    let waited: Vec<usize> = v
        .followed
        .iter()
        .copied()
        .filter(|i| {
            matches!(
                say.events[*i]
                    .failure
                    .as_ref()
                    .and_then(|f| f.dist.as_ref()),
                Some(Dist::WatchdogTimeout { .. })
            )
        })
        .chain(std::iter::once(timeout))
        .collect();
    let stuck = say.ranks(behind);
    Told {
        finding: "rank-stuck",
        title: format!(
            "{stuck} never reached {op} #{seq}: {} waited for it until NCCL's watchdog aborted them ({} timeout)",
            say.ranks(&waited),
            duration_ms(limit)
        ),
        confidence: "certain",
        remedy: format!(
            "Find what {stuck} did instead of {op} #{seq}: where its main thread was (gpumon's probe notes it; else py-spy dump the rank while it hangs) — a data loader or a file read on that rank alone, or a collective only some ranks call. A longer timeout does not bring a rank that never comes."
        ),
    }
}

fn outside(say: &Say, v: &Verdict, stop: usize) -> Told {
    let e = &say.events[stop];
    let n = v.followed_ranks(say.events, say.who);
    let stopped = if n > 0 {
        format!(", and {} ended after it", ranks_count(n))
    } else {
        String::new()
    };
    let (what, remedy) = match e.failure.as_ref().and_then(|f| f.dist.as_ref()) {
        Some(Dist::StepCancelled { step, due }) => {
            let due = due.as_deref().map(str::to_lowercase);
            let what = match &due {
                Some(d) => format!("Slurm cancelled {step} due to {d}{}", (say.at)(e)),
                None => format!("Slurm cancelled {step}{} (scancel)", (say.at)(e)),
            };
            let remedy = match due.as_deref() {
                Some(d) if d.contains("time limit") => {
                    "Nothing in the job failed: it ran out of its time. Ask for more (sbatch --time), or save a checkpoint every so often and resume from the last one in the next job."
                }
                Some(d) if d.contains("preempt") => {
                    "Nothing in the job failed: a job of higher priority took its nodes. Resume from the last checkpoint (sbatch --requeue requeues it), and save checkpoints often enough to lose little."
                }
                _ => {
                    "Nothing in the job failed: it was cancelled (by its owner, an administrator or the scheduler). Resume from the last checkpoint if it should go on."
                }
            };
            (what, remedy)
        }
        Some(Dist::LauncherSignalled {
            launcher, signal, ..
        }) => (
            format!("{launcher} itself received {signal}{}", (say.at)(e)),
            "Nothing in the job failed: whatever signalled the launcher (a scheduler's time limit, a pod stopped, a kill) ended it. Save a checkpoint every so often and resume from the last one; a time limit can be raised where it is set.",
        ),
        _ => (
            (say.label)(stop),
            "Nothing in the job failed: it was stopped from outside.",
        ),
    };
    Told {
        finding: "stopped-from-outside",
        title: format!("the job was stopped from outside: {what}{stopped}; no rank failed"),
        confidence: "certain",
        remedy: remedy.into(),
    }
}

fn survived(say: &Say, own: &[usize]) -> Told {
    let e = &say.events[own[0]];
    let jax = e.failure.as_ref().is_some_and(|f| {
        matches!(
            f.source,
            Some(crate::oom::failure::Dialect::Jax | crate::oom::failure::Dialect::Tensorflow)
        )
    });
    let remedy = if jax {
        "Nothing ended the job, but with JAX's asynchronous dispatch a computation that could not get its memory returns an error that raises only when its result is read: read or block on the results after it (jax.block_until_ready) to know. To stop it failing, drop arrays the job no longer needs (del them, or let them go out of scope), or give XLA more of the GPU (XLA_PYTHON_CLIENT_MEM_FRACTION)."
    } else {
        "Nothing ended the job: the failure was caught and the job went on. Check that what it computed after it is whole; to stop it failing, free what the job keeps (del the tensors, then torch.cuda.empty_cache() if another process needs the memory) or give it a smaller batch."
    };
    Told {
        finding: "survived",
        title: format!(
            "{} ran out of memory{} and ran on: its results after it may be errors that were never read",
            say.ranks(own),
            (say.at)(e)
        ),
        confidence: "likely",
        remedy: remedy.into(),
    }
}
