//! What a distributed job's failures look like in logs, besides OOMs and memory faults: NCCL's
//! watchdog timeouts and errors (`nccl.rs`), torchrun's agent lines and failure summary
//! (`torchrun.rs`), srun's task lines and slurmstepd's cancellation (`slurm.rs`), DeepSpeed's
//! launcher (`deepspeed.rs`), JAX's coordination service (`jax.rs`). Each format's pattern is in
//! its file, with its test built from real lines.
//!
//! One [`DistReader`] reads one log: bounded state (one torchrun summary entry, one list of JAX
//! task ids, the last events said, for repeats), a cheap word scan before any pattern, and every
//! string taken from the log capped and printable.

mod deepspeed;
mod jax;
mod nccl;
mod slurm;
mod torchrun;

use std::collections::VecDeque;
use std::sync::LazyLock;

use regex_lite::Regex;
use serde::{Deserialize, Serialize};

use super::re;
pub use torchrun::signal_name;

/// Characters kept of a string read from a log (an op, a host, a time, a signal's name).
pub const MAX_WORD: usize = 64;
/// Task ranges kept from one srun line, task ids from one JAX list.
pub const MAX_TASKS: usize = 64;
/// Lines within which an event said again (the same rank, the same words) is the same event.
const REPEAT_LINES: u64 = 400;
const MAX_RECENT: usize = 64;

/// A distributed job's event read from a log: one rank's failure in its own words or its
/// launcher's. Which rank it is about is the `Failure`'s `rank`/`local_rank` where one rank is
/// meant; events about several ranks list them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Dist {
    /// NCCL's watchdog (PyTorch's ProcessGroupNCCL) aborted a collective that ran past its
    /// timeout: this rank waited for the others; it is not the one that failed.
    WatchdogTimeout {
        /// `ALLREDUCE`, `BROADCAST`, `_REDUCE_SCATTER_BASE`, …
        op: String,
        /// The collective's sequence number in its process group.
        seq: u64,
        timeout_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ran_ms: Option<u64>,
        /// The time printed on the line (`HH:MM:SS`, the job's clock).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        time: Option<String>,
    },
    /// NCCL gave up: a peer is gone (`remote process exited or there was a network error`,
    /// `ncclRemoteError`), or a CUDA call failed inside NCCL (`ncclUnhandledCudaError`; an OOM
    /// inside NCCL is an OOM, not this).
    NcclError {
        cause: NcclCause,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        time: Option<String>,
    },
    /// One entry of torchrun's failure summary (`ChildFailedError`): the root cause ("first
    /// observed failure") or one of the other failures.
    Torchrun {
        root: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exitcode: Option<i32>,
        /// `SIGTERM`, … when the rank died of a signal.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pid: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        host: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        time: Option<String>,
        /// `false`: the entry was cut before its rank and exit code (the log ended, or another
        /// line came in the middle).
        complete: bool,
        /// What its `rank :` field said when that is no rank (`999999999999`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rank_unreadable: Option<String>,
    },
    /// torchrun's agent saw a worker fail first: `failed (exitcode: 1) local_rank: 0 (pid: 1446)`.
    AgentFailed {
        exitcode: i32,
        pid: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        time: Option<String>,
    },
    /// A launcher stopped a process after another failed: torchrun's `Sending process N closing
    /// signal SIGTERM`, DeepSpeed's `Killing subprocess N`.
    Stopped {
        pid: u32,
        signal: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        time: Option<String>,
    },
    /// srun's word on ended tasks (a task is a rank): `task 0: Exited with exit code 1`,
    /// `tasks 1-3: Killed`.
    SrunTasks {
        /// Inclusive ranges.
        tasks: Vec<(u32, u32)>,
        /// What srun said (`Exited with exit code 1`, `Killed`, `Terminated`, `Out Of Memory`).
        how: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node: Option<String>,
    },
    /// slurmstepd: `*** STEP 52222788.0 ON nid002888 CANCELLED AT … DUE TO TASK FAILURE ***`.
    StepCancelled {
        step: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        due: Option<String>,
    },
    /// DeepSpeed's launcher: a rank's process exited with `code` (negative: the signal that
    /// killed it). Its local rank is the `Failure`'s.
    DeepspeedExit { code: i32 },
    /// JAX's coordination service named tasks (process ids) that failed.
    JaxTasks { why: JaxWhy, tasks: Vec<u32> },
    /// JAX ended this process because the distributed service saw another task die.
    JaxFatal,
    /// A launcher was itself stopped from outside (torchrun's `Received 15 death signal,
    /// shutting down workers`; it then stops every rank): no rank failed.
    LauncherSignalled {
        launcher: String,
        /// `SIGTERM`, or the number printed when it names no common signal.
        signal: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        time: Option<String>,
    },
    /// A rank's answer to the flight recorder's dump signal after another rank's collective timed
    /// out: `Received a dump signal due to a collective timeout from rank 0 … Last enqueued NCCL
    /// work: 202, last completed NCCL work: 202.` A rank whose last enqueued collective is below
    /// the one the others timed out on never reached it.
    DumpSignal {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from_rank: Option<u32>,
        /// `-1`: no collective was ever enqueued.
        last_enqueued: i64,
        last_completed: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        time: Option<String>,
    },
}

/// What NCCL said went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NcclCause {
    /// A peer process exited, or the network between them failed.
    Remote,
    /// A CUDA call inside NCCL failed (not an OOM).
    Cuda,
}

/// How JAX knew the tasks failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JaxWhy {
    /// `Task … heartbeat timeout`.
    Heartbeat,
    /// `Barrier timed out … Timed out task names:`.
    Barrier,
    /// `The following tasks are unhealthy (stopped sending heartbeats):`.
    Unhealthy,
}

impl Dist {
    /// The process id the event names, when it names one (torchrun's summary and agent, a
    /// launcher's stop).
    pub fn pid(&self) -> Option<u32> {
        match self {
            Dist::Torchrun { pid, .. } => *pid,
            Dist::AgentFailed { pid, .. } | Dist::Stopped { pid, .. } => Some(*pid),
            _ => None,
        }
    }

    /// Whether the event is about the process that printed it (a watchdog's abort, NCCL's error,
    /// JAX's termination); the others are a launcher's or a peer's word on another rank.
    pub fn about_printer(&self) -> bool {
        matches!(
            self,
            Dist::WatchdogTimeout { .. }
                | Dist::NcclError { .. }
                | Dist::JaxFatal
                | Dist::DumpSignal { .. }
        )
    }

    /// The time printed on its line, when it had one.
    pub fn time(&self) -> Option<&str> {
        match self {
            Dist::WatchdogTimeout { time, .. }
            | Dist::NcclError { time, .. }
            | Dist::Torchrun { time, .. }
            | Dist::AgentFailed { time, .. }
            | Dist::Stopped { time, .. }
            | Dist::LauncherSignalled { time, .. }
            | Dist::DumpSignal { time, .. } => time.as_deref(),
            _ => None,
        }
    }
}

/// One event a line said, before it becomes a `Parsed`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Found {
    pub dist: Dist,
    /// The rank it is about, when the event itself says (`[Rank 1] Watchdog …`, `rank : 1`).
    pub rank: Option<u32>,
    pub local_rank: Option<u32>,
    /// Its message: the line from the event's own words (log prefixes dropped), or words made
    /// from what a block of lines said.
    pub message: String,
    /// The line it is reported on (a block's first line; the current line otherwise).
    pub line: Option<u64>,
    /// What makes a repeat of it the same event (with its rank).
    pub key: String,
}

/// Reads one log's distributed events, line by line.
#[derive(Debug, Default)]
pub(crate) struct DistReader {
    summary: Option<torchrun::Summary>,
    jax_list: Option<jax::List>,
    /// Events said lately: (line, rank, key).
    recent: VecDeque<(u64, Option<u32>, String)>,
}

/// The phrases the formats have (NCCL_DEBUG=INFO prints "NCCL" on every line; none of these).
const PHRASES: [&str; 18] = [
    nccl::WATCHDOG_WORDS,
    nccl::DUMP_WORDS,
    torchrun::DEATH_WORDS,
    "remote process exited",
    "ncclRemoteError",
    "unhandled cuda error",
    "ncclUnhandledCudaError",
    torchrun::AGENT_WORDS,
    torchrun::STOP_WORDS,
    "run: error:",
    "CANCELLED AT",
    deepspeed::WORDS,
    jax::HEARTBEAT_WORDS,
    jax::FATAL,
    jax::UNHEALTHY,
    jax::BARRIER,
    "Failures:",
    "Root Cause",
];
static PHRASE: crate::oom::screen::Screen = crate::oom::screen::Screen::new(&PHRASES, false);

/// Whether a line may hold an event: one plain scan for the phrases, before any pattern.
fn worth_reading(text: &str) -> bool {
    PHRASE.holds(text)
}

impl DistReader {
    /// Whether a block of lines (torchrun's summary) is being read.
    pub fn in_block(&self) -> bool {
        self.summary.is_some()
    }

    /// Reads one line (its rank prefix already taken off: `body`, with `rank` the prefix's);
    /// events it completes go to `out`. `true`: the line was part of a block.
    pub fn feed(
        &mut self,
        line_no: u64,
        body: &str,
        rank: Option<u32>,
        out: &mut Vec<Found>,
    ) -> bool {
        self.recent
            .retain(|(l, _, _)| line_no.saturating_sub(*l) <= REPEAT_LINES);
        if let Some(s) = &mut self.summary {
            let mut found = Vec::new();
            let step = s.feed(line_no, body, &mut found);
            if step != torchrun::Step::Took {
                self.summary = None;
            }
            self.emit(line_no, found, out);
            if step != torchrun::Step::Ended {
                return true;
            }
        }
        if let Some(l) = &mut self.jax_list {
            if l.take(body) {
                return true;
            }
            let found = self.jax_list.take().and_then(jax::List::done);
            self.emit(line_no, found.into_iter().collect(), out);
        }
        if !worth_reading(body) {
            return false;
        }
        if let Some(s) = torchrun::Summary::start(line_no, body) {
            self.summary = Some(s);
            return true;
        }
        if let Some(l) = jax::List::start(line_no, body) {
            // JAX's fatal line quotes the list it ends the process for: the end is this
            // process's own event, and the tasks that follow are read (and said once).
            if body.contains(jax::FATAL) {
                self.emit(line_no, jax::parse(body).into_iter().collect(), out);
            }
            self.jax_list = Some(l);
            return true;
        }
        let found = nccl::parse(body)
            .or_else(|| nccl::dump(body))
            .or_else(|| torchrun::agent(body))
            .or_else(|| torchrun::death(body))
            .or_else(|| slurm::parse(body))
            .or_else(|| deepspeed::parse(body))
            .or_else(|| jax::parse(body));
        if let Some(mut f) = found {
            f.rank = rank.or(f.rank);
            self.emit(line_no, vec![f], out);
        }
        false
    }

    /// The log ended or went quiet: a block being read is done as it is.
    pub fn flush(&mut self, out: &mut Vec<Found>) {
        let mut found: Vec<Found> = self.summary.take().map(|s| s.cut()).unwrap_or_default();
        found.extend(self.jax_list.take().and_then(jax::List::done));
        for f in found {
            // Said once, as a block ended by a line is (JAX's fatal line quotes its list again).
            let line = f.line.unwrap_or(0);
            self.emit(line, vec![f], out);
        }
    }

    fn emit(&mut self, line_no: u64, found: Vec<Found>, out: &mut Vec<Found>) {
        for f in found {
            let seen = self
                .recent
                .iter()
                .any(|(_, r, k)| *r == f.rank && *k == f.key);
            if seen {
                continue;
            }
            if self.recent.len() == MAX_RECENT {
                self.recent.pop_front();
            }
            self.recent.push_back((line_no, f.rank, f.key.clone()));
            out.push(f);
        }
    }
}

static TIME: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?:^|[\[ ])[EWIF]\d{3,4} (?P<glog>\d{2}:\d{2}:\d{2})|\d{4}-\d{2}-\d{2}[ T_](?P<iso>\d{2}:\d{2}:\d{2})",
    )
});

/// The time of day printed near the start of a line (glog's `E0321 02:07:08.408`, Python
/// logging's `[2024-05-08 08:47:31,261]`), as `HH:MM:SS`.
pub(crate) fn printed_time(text: &str) -> Option<String> {
    let end = text.char_indices().nth(48).map_or(text.len(), |(i, _)| i);
    let c = TIME.captures(&text[..end])?;
    c.name("glog")
        .or_else(|| c.name("iso"))
        .map(|m| m.as_str().to_string())
}

/// At most [`MAX_WORD`] characters of a word from a log, control characters replaced.
pub(crate) fn word(s: &str) -> String {
    s.trim()
        .chars()
        .take(MAX_WORD)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// The event's own text on the line: from `at`, back to the end of a log prefix (`…cpp:607]`).
pub(crate) fn message_from(text: &str, at: usize) -> String {
    let start = text
        .get(..at)
        .map_or(0, |head| head.rfind(']').map_or(0, |i| i + 1));
    super::cap(text.get(start..).unwrap_or(text).trim(), super::MAX_MESSAGE)
}

#[cfg(test)]
mod tests;
