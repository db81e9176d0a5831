//! The failures (OOMs and memory faults) one side's alerts hold and the other's do not: the
//! same alert in both (two moments of one machine) is no difference; a new one is.

use super::{Difference, Topic};
use crate::snapshot::{AlertDoc, LevelDoc, Snapshot};

/// At most this many one-sided failures are listed a side; the rest are counted.
const LISTED: usize = 5;

/// "06:22:31 UTC" of an RFC 3339 time, or the text as it is.
pub(super) fn clock(at: &str) -> &str {
    at.get(11..19)
        .filter(|t| t.bytes().all(|b| b.is_ascii_digit() || b == b':'))
        .unwrap_or(at)
}

fn failures(s: &Snapshot) -> impl Iterator<Item = &AlertDoc> {
    s.alerts.iter().filter(|a| a.level == LevelDoc::Failure)
}

/// The latest failure raised for process `pid` in `s`.
pub(super) fn of_process(s: &Snapshot, pid: u32) -> Option<&AlertDoc> {
    failures(s)
        .filter(|a| a.pid == Some(pid))
        .max_by(|x, y| x.at.cmp(&y.at))
}

/// One difference per failure on one side only (oldest first, at most `LISTED` a side).
pub(super) fn compare(a: &Snapshot, b: &Snapshot, out: &mut Vec<Difference>) {
    let key = |f: &AlertDoc| (f.at.clone(), f.pid, f.class.clone());
    for (here, there, on_a) in [(a, b, true), (b, a, false)] {
        let theirs: Vec<_> = failures(there).map(key).collect();
        let mut only: Vec<&AlertDoc> = failures(here)
            .filter(|f| !theirs.contains(&key(f)))
            .collect();
        only.sort_by(|x, y| x.at.cmp(&y.at));
        let more = only.len().saturating_sub(LISTED);
        for f in only.into_iter().take(LISTED) {
            out.push(one(here, f, on_a));
        }
        if more > 0 {
            let (side, other) = if on_a { ("A", "B") } else { ("B", "A") };
            out.push(Difference::text(
                Topic::Failure,
                format!("{more} more failures on {side} only"),
                String::new(),
                String::new(),
                format!("{side}'s alerts hold {more} more failures that {other}'s do not."),
            ));
        }
    }
}

fn one(s: &Snapshot, f: &AlertDoc, on_a: bool) -> Difference {
    let process = f.pid.map(|pid| {
        let p = s.processes.iter().find(|p| p.pid == pid);
        let fate = match p.and_then(|p| p.exited_at.as_deref()) {
            Some(at) => format!("; pid {pid} exited at {}", clock(at)),
            None if p.is_some() => format!("; pid {pid} still runs"),
            None => String::new(),
        };
        (p.map(super::label), fate)
    });
    let (label, fate) = process.unwrap_or_default();
    let subject = match (label, f.pid) {
        (Some(l), _) => format!("{l}: {} failure", f.class),
        (None, Some(pid)) => format!("pid {pid}: {} failure", f.class),
        (None, None) => format!("{} failure", f.class),
    };
    let when = format!("at {}: {}", clock(&f.at), f.title);
    let (a, b) = if on_a {
        (when, "none".to_string())
    } else {
        ("none".to_string(), when)
    };
    let side = if on_a { "A" } else { "B" };
    Difference::text(
        Topic::Failure,
        subject,
        a,
        b,
        format!(
            "Only {side}'s alerts hold this failure{fate}: a job that hit it may have shrunk \
             its work or ended, so its memory on the two sides does not compare as use."
        ),
    )
}
