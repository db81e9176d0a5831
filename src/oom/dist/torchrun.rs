//! torchrun's word on its workers (torch/distributed/elastic): the agent's `failed (exitcode: 1)
//! local_rank: 0 (pid: 1446) of binary: …` (the first failure it saw), `Sending process 1447
//! closing signal SIGTERM` (the others, stopped), and the `ChildFailedError` summary it prints
//! after every worker died: a `Failures:` block (the other ranks) and `Root Cause (first observed
//! failure):`, each entry `[i]:` with `time`, `host`, `rank : R (local_rank: L)`, `exitcode : C
//! (pid: P)` (torch ≥ 2.8 adds `(SIGTERM)`), `error_file`, `traceback`.

use std::sync::LazyLock;

use regex_lite::Regex;

use super::{Dist, Found, message_from, printed_time, word};
use crate::oom::re;

static AGENT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"failed \(exitcode: (?P<code>-?\d{1,6})\) local_rank: (?P<local>\d{1,7}) \(pid: (?P<pid>\d{1,10})\) of (?:binary|fn)",
    )
});
static STOP: LazyLock<Regex> = LazyLock::new(|| {
    re(r"Sending process (?P<pid>\d{1,10}) closing signal (?P<sig>SIG[A-Z0-9]{1,8})")
});
static DEATH: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"Received (?:Signals\.)?(?P<sig>SIG[A-Z0-9]{1,8}|\d{1,3}) death signal, shutting down workers",
    )
});
static ENTRY: LazyLock<Regex> = LazyLock::new(|| re(r"^\[\d{1,7}\]:$"));
static FIELD: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^\s+(?P<k>time|host|rank|exitcode|error_file|traceback)\s*:\s?(?P<v>.*)$")
});
static RANK: LazyLock<Regex> =
    LazyLock::new(|| re(r"^(?P<r>\d{1,10})(?: \(local_rank: (?P<l>\d{1,10})\))?"));
static EXIT: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^(?P<c>-?\d{1,6})(?: \(pid: (?P<p>\d{1,10})\))?(?:\s+\((?P<s>SIG[A-Z0-9]{1,8})\))?")
});
static SIGNAL: LazyLock<Regex> =
    LazyLock::new(|| re(r"Signal \d{1,3} \((?P<s>SIG[A-Z0-9]{1,8})\)"));
static CLOCK: LazyLock<Regex> = LazyLock::new(|| re(r"\d{2}:\d{2}:\d{2}"));

/// Lines of an entry's traceback read past before the entry counts as cut.
const MAX_TRACEBACK_LINES: u32 = 400;

/// Words of the agent's line on the first failure it saw, and on a process it stopped.
pub(super) const AGENT_WORDS: &str = "failed (exitcode";
pub(super) const STOP_WORDS: &str = "closing signal";
/// Words of the agent's line when it was itself signalled.
pub(super) const DEATH_WORDS: &str = "death signal";

/// The agent's line when torchrun itself was signalled (a scheduler's time limit, a `kill`, a
/// pod stopped): it then stops every worker, and no worker failed.
pub(super) fn death(body: &str) -> Option<Found> {
    let c = body
        .contains(DEATH_WORDS)
        .then(|| DEATH.captures(body))
        .flatten()?;
    let raw = &c["sig"];
    let signal = match raw.parse::<i32>() {
        Ok(n) => signal_name(-n).map_or_else(|| raw.to_string(), str::to_string),
        Err(_) => word(raw),
    };
    Some(Found {
        key: format!("death:{signal}"),
        dist: Dist::LauncherSignalled {
            launcher: "torchrun".into(),
            signal,
            time: printed_time(body),
        },
        rank: None,
        local_rank: None,
        message: message_from(body, c.get(0)?.start()),
        line: None,
    })
}

/// The agent's lines: the first failure it saw, and the processes it stopped.
pub(super) fn agent(body: &str) -> Option<Found> {
    let (failed, stopped) = (body.contains(AGENT_WORDS), body.contains(STOP_WORDS));
    if !failed && !stopped {
        return None;
    }
    let time = printed_time(body);
    if let Some(c) = failed.then(|| AGENT.captures(body)).flatten() {
        let exitcode = c["code"].parse().ok()?;
        let pid = c["pid"].parse().ok()?;
        let local = c["local"].parse().ok();
        return Some(Found {
            dist: Dist::AgentFailed {
                exitcode,
                pid,
                time,
            },
            rank: None,
            local_rank: local,
            message: message_from(body, c.get(0)?.start()),
            line: None,
            key: format!("agent:{pid}"),
        });
    }
    let c = STOP.captures(body)?;
    let pid = c["pid"].parse().ok()?;
    Some(Found {
        dist: Dist::Stopped {
            pid,
            signal: word(&c["sig"]),
            time,
        },
        rank: None,
        local_rank: None,
        message: message_from(body, c.get(0)?.start()),
        line: None,
        key: format!("stop:{pid}"),
    })
}

/// The signal a negative exit code means, for the common ones.
pub fn signal_name(code: i32) -> Option<&'static str> {
    Some(match code {
        -2 => "SIGINT",
        -6 => "SIGABRT",
        -7 => "SIGBUS",
        -9 => "SIGKILL",
        -11 => "SIGSEGV",
        -15 => "SIGTERM",
        _ => return None,
    })
}

/// What a line did to the summary being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// It was part of the summary.
    Took,
    /// It closed the summary (its last line).
    Done,
    /// The summary ended before it: the line is read on its own.
    Ended,
}

/// One entry being read.
#[derive(Debug, Default)]
struct Entry {
    line: u64,
    root: bool,
    rank: Option<u32>,
    local_rank: Option<u32>,
    exitcode: Option<i32>,
    signal: Option<String>,
    pid: Option<u32>,
    host: Option<String>,
    time: Option<String>,
    traceback_lines: u32,
    /// What its `rank :` field said, when that is no rank (a number too large, not a number).
    rank_unreadable: Option<String>,
}

/// torchrun's failure summary, read from its `Failures:` or `Root Cause …:` line on.
#[derive(Debug)]
pub(super) struct Summary {
    root: bool,
    entry: Option<Entry>,
}

impl Summary {
    /// The summary's first line, if `body` is one.
    pub fn start(_line_no: u64, body: &str) -> Option<Summary> {
        let t = body.trim();
        let root = if t == "Failures:" {
            false
        } else if t.starts_with("Root Cause (first observed failure):") {
            true
        } else {
            return None;
        };
        Some(Summary { root, entry: None })
    }

    pub fn feed(&mut self, line_no: u64, body: &str, out: &mut Vec<Found>) -> Step {
        let t = body.trim_end();
        let bare = t.trim_start();
        if bare == "Failures:" || bare.starts_with("Root Cause (first observed failure):") {
            self.close(true, out);
            self.root = bare.starts_with("Root");
            return Step::Took;
        }
        if bare == "<NO_OTHER_FAILURES>" {
            return Step::Took;
        }
        if ENTRY.is_match(bare) {
            self.close(true, out);
            self.entry = Some(Entry {
                line: line_no,
                root: self.root,
                ..Entry::default()
            });
            return Step::Took;
        }
        if bare.len() >= 3 && bare.bytes().all(|b| b == b'-') {
            self.close(true, out);
            return Step::Took;
        }
        if bare.len() >= 3 && bare.bytes().all(|b| b == b'=') {
            self.close(true, out);
            return Step::Done;
        }
        let Some(e) = &mut self.entry else {
            return Step::Ended;
        };
        if let Some(c) = FIELD.captures(t) {
            let v = c["v"].trim();
            match &c["k"] {
                "time" => e.time = CLOCK.find(v).map(|m| m.as_str().to_string()),
                "host" => e.host = Some(word(v)).filter(|h| !h.is_empty()),
                "rank" => {
                    if let Some(r) = RANK.captures(v) {
                        e.rank = r["r"]
                            .parse()
                            .ok()
                            .filter(|r| *r <= crate::oom::prefix::MAX_RANK);
                        e.local_rank = r.name("l").and_then(|l| l.as_str().parse().ok());
                    }
                    if e.rank.is_none() {
                        e.rank_unreadable = Some(word(v));
                    }
                }
                "exitcode" => {
                    if let Some(x) = EXIT.captures(v) {
                        e.exitcode = x["c"].parse().ok();
                        e.pid = x.name("p").and_then(|p| p.as_str().parse().ok());
                        e.signal = x.name("s").map(|s| word(s.as_str()));
                    }
                }
                "traceback" if e.signal.is_none() => {
                    e.signal = SIGNAL.captures(v).map(|s| word(&s["s"]));
                }
                _ => {}
            }
            return Step::Took;
        }
        // A traceback's own lines, indented under the entry.
        if t.starts_with([' ', '\t']) && e.traceback_lines < MAX_TRACEBACK_LINES {
            e.traceback_lines += 1;
            return Step::Took;
        }
        self.close(false, out);
        Step::Ended
    }

    /// The log ended in the middle of the summary.
    pub fn cut(mut self) -> Vec<Found> {
        let mut out = Vec::new();
        self.close(false, &mut out);
        out
    }

    /// Ends the entry being read; `whole`: it ended where an entry ends.
    fn close(&mut self, whole: bool, out: &mut Vec<Found>) {
        let Some(e) = self.entry.take() else { return };
        let complete =
            whole && (e.rank.is_some() || e.rank_unreadable.is_some()) && e.exitcode.is_some();
        let signal = e
            .signal
            .or_else(|| e.exitcode.and_then(signal_name).map(str::to_string));
        let mut message = format!(
            "torchrun's summary: {} ",
            if e.root {
                "root cause (first observed failure)"
            } else {
                "failure"
            }
        );
        match (e.rank, e.local_rank) {
            (Some(r), Some(l)) => message.push_str(&format!("rank {r} (local_rank: {l})")),
            (Some(r), None) => message.push_str(&format!("rank {r}")),
            _ => match &e.rank_unreadable {
                Some(v) => message.push_str(&format!("a rank that cannot be one ({v})")),
                None => message.push_str("rank not said"),
            },
        }
        if let Some(c) = e.exitcode {
            message.push_str(&format!(", exitcode {c}"));
        }
        if let Some(s) = &signal {
            message.push_str(&format!(" ({s})"));
        }
        if let Some(p) = e.pid {
            message.push_str(&format!(", pid {p}"));
        }
        if let Some(h) = &e.host {
            message.push_str(&format!(", host {h}"));
        }
        if let Some(t) = &e.time {
            message.push_str(&format!(", at {t}"));
        }
        if !complete {
            message.push_str(" (the entry is cut)");
        }
        out.push(Found {
            key: format!("torchrun:{}:{}:{:?}", e.root, e.line, e.pid),
            dist: Dist::Torchrun {
                root: e.root,
                exitcode: e.exitcode,
                signal,
                pid: e.pid,
                host: e.host,
                time: e.time,
                complete,
                rank_unreadable: e.rank_unreadable,
            },
            rank: e.rank,
            local_rank: e.local_rank,
            message,
            line: Some(e.line),
        });
    }
}

#[cfg(test)]
pub(super) mod tests;
