//! One lane of a log: the lines of one rank prefix (or of no prefix). An OOM's dump window and
//! the memory of failures already reported (repeats) are kept per lane, so ranks that share one
//! log do not close each other's windows, and two ranks' identical OOMs are two failures.

use std::collections::VecDeque;

use super::sizes::Size;
use super::{DUP_LINES, Event, Family, IDLE_LINES, Kind, Parsed, tensorflow};
use crate::oom::failure::Dialect;

/// A raw CUDA error this close after a framework's failure is part of it.
const RAW_AFTER_LINES: u64 = 20;
const MAX_RECENT: usize = 8;
/// Lines of the whole log (any lane) after which a window still open closes: a rank that went
/// quiet while the others talk.
const FOREIGN_IDLE_LINES: u64 = 1024;

/// Which prefix a lane holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LaneKey {
    None,
    Rank(u32),
    Local(u32),
    /// A prefix whose number is no rank: the lines of that prefix as printed (a hash of it)
    /// together, apart from every other prefix's.
    Unread(u64),
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Sig {
    family: Family,
    request: Option<Size>,
    key: Option<String>,
}

impl Sig {
    pub fn of(e: &Event) -> Sig {
        Sig {
            family: e.family,
            request: e.numbers.request,
            key: e.key.clone(),
        }
    }

    /// BFC rounds requests up to 256 bytes, so a tensor and its rounded request match.
    fn same(&self, o: &Sig) -> bool {
        let family = self.family == o.family
            || matches!(
                (self.family, o.family),
                (Family::Bfc | Family::Async, Family::Bfc | Family::Async)
            );
        let by_key = matches!((&self.key, &o.key), (Some(a), Some(b)) if a == b);
        let by_size = matches!((self.request, o.request), (Some(a), Some(b))
            if a.bytes.abs_diff(b.bytes) <= 256 + a.tolerance + b.tolerance);
        family && (by_key || by_size)
    }
}

#[derive(Debug)]
pub(super) struct Pending {
    pub parsed: Parsed,
    pub family: Family,
    sigs: Vec<Sig>,
    idle: u32,
    last: u64,
}

#[derive(Debug)]
pub(super) struct Lane {
    pub key: LaneKey,
    pub pending: Option<Pending>,
    /// Recently reported failures: (last line, signature).
    recent: VecDeque<(u64, Sig)>,
    /// The last line read in this lane.
    pub last: u64,
}

impl Lane {
    pub fn new(key: LaneKey) -> Lane {
        Lane {
            key,
            pending: None,
            recent: VecDeque::new(),
            last: 0,
        }
    }

    pub fn forget_old(&mut self, line_no: u64) {
        self.last = line_no;
        self.recent
            .retain(|(l, _)| line_no.saturating_sub(*l) <= DUP_LINES);
    }

    /// Closes an open window (the log went quiet, or ended).
    pub fn flush(&mut self, out: &mut Vec<Parsed>) {
        if let Some(p) = self.pending.take() {
            for s in p.sigs {
                self.remember(p.last, s);
            }
            out.push(p.parsed);
        }
    }

    /// Closes a window that the log's other lanes outlived.
    pub fn close_stale(&mut self, line_no: u64, out: &mut Vec<Parsed>) {
        if self
            .pending
            .as_ref()
            .is_some_and(|p| line_no.saturating_sub(p.last) > FOREIGN_IDLE_LINES)
        {
            self.flush(out);
        }
    }

    pub fn unmatched(&mut self, line_no: u64, text: &str, out: &mut Vec<Parsed>) {
        let Some(p) = &mut self.pending else { return };
        if tensorflow::absorb(&mut p.parsed.numbers, text) {
            p.idle = 0;
            p.last = line_no;
        } else {
            p.idle += 1;
            if p.idle > IDLE_LINES {
                self.flush(out);
            }
        }
    }

    pub fn handle(&mut self, line_no: u64, e: Event, parsed: Parsed, out: &mut Vec<Parsed>) {
        let sig = Sig::of(&e);
        match e.kind {
            Kind::Header if e.family == Family::Nccl && self.seen(&sig) => {}
            Kind::Header => {
                self.flush(out);
                self.pending = Some(Pending {
                    parsed,
                    family: e.family,
                    sigs: vec![sig],
                    idle: 0,
                    last: line_no,
                });
            }
            Kind::Final if self.pending.is_some() => {
                if let Some(p) = &mut self.pending {
                    if e.dialect == Dialect::Jax {
                        p.parsed.dialect = Some(Dialect::Jax);
                    }
                    p.parsed.numbers.fill_from(e.numbers);
                    p.sigs.push(sig);
                    p.idle = 0;
                    p.last = line_no;
                }
            }
            Kind::Final | Kind::Complete => {
                if !self.seen(&sig) {
                    self.remember(line_no, sig);
                    out.push(parsed);
                }
            }
            Kind::Raw => {
                let near = self
                    .recent
                    .iter()
                    .any(|(l, _)| line_no.saturating_sub(*l) <= RAW_AFTER_LINES);
                if self.pending.is_none() && !near && !self.seen(&sig) {
                    self.remember(line_no, sig);
                    out.push(parsed);
                }
            }
        }
    }

    pub fn seen(&self, sig: &Sig) -> bool {
        self.recent.iter().any(|(_, s)| s.same(sig))
            || self
                .pending
                .as_ref()
                .is_some_and(|p| p.sigs.iter().any(|s| s.same(sig)))
    }

    fn remember(&mut self, line: u64, sig: Sig) {
        if self.recent.len() == MAX_RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back((line, sig));
    }
}

#[cfg(test)]
mod tests;
