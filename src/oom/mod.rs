//! The streaming OOM parser: fed a log line by line, it yields one [`Parsed`] per failure event.
//!
//! A header that a dump follows (TF/XLA BFC, cuda_malloc_async) opens a window that collects the
//! dump's numbers and the later error line of the same failure; the window closes after
//! [`IDLE_LINES`] unrelated lines, at the next header, or on [`OomParser::flush`]. A failure printed
//! again (a traceback repeating the message) within [`DUP_LINES`] lines is not reported twice.

mod cuda;
mod cupy;
pub mod failure;
pub mod fault;
mod jax;
mod pytorch;
pub mod sizes;
mod tensorflow;
pub mod xid;

use std::collections::VecDeque;
use std::sync::LazyLock;

use regex_lite::Regex;

use crate::oom::failure::{Allocator, Dialect, Failure, Numbers};
use sizes::Size;

/// Bytes of a line that are read; the rest of a longer line is dropped.
pub const MAX_LINE: usize = 16 * 1024;
/// Characters of a failure's message kept.
pub const MAX_MESSAGE: usize = 600;
/// Unrelated lines after which an open dump window closes.
pub const IDLE_LINES: u32 = 64;
/// Lines within which a repeat of a failure is the same failure.
pub const DUP_LINES: u64 = 400;
/// A raw CUDA error this close after a framework's failure is part of it.
const RAW_AFTER_LINES: u64 = 20;
const MAX_RECENT: usize = 8;

/// Compiles a pattern written in this crate (a bad one is a bug caught by every test).
pub(crate) fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("static regex")
}

/// Whether a line is worth handing to the parsers: every wording has one of these words (ASCII,
/// any case). A plain scan, as it runs on every line a job prints.
fn worth_parsing(text: &str) -> bool {
    let bytes = text.as_bytes();
    ["memory", "alloc", "oom"].iter().any(|word| {
        bytes
            .windows(word.len())
            .any(|w| w.eq_ignore_ascii_case(word.as_bytes()))
    })
}

static ANSI: LazyLock<Regex> = LazyLock::new(|| {
    re(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
});

/// A log line as text: invalid UTF-8 replaced, colour codes and control characters dropped.
pub fn clean(raw: &[u8]) -> String {
    let lossy = String::from_utf8_lossy(raw);
    // Escape sequences all start with ESC; most lines have none.
    let text = if lossy.contains('\x1b') {
        ANSI.replace_all(&lossy, "")
    } else {
        std::borrow::Cow::Borrowed(&*lossy)
    };
    text.chars()
        .map(|c| if c.is_control() && c != '\t' { ' ' } else { c })
        .collect::<String>()
        .trim_end()
        .to_string()
}

/// At most `max` characters of `s`.
pub(crate) fn cap(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

/// One failure found in a log.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The line its first line was on.
    pub line: u64,
    pub message: String,
    pub dialect: Dialect,
    pub allocator: Option<Allocator>,
    pub numbers: Numbers,
    /// A memory fault that is not an OOM (an illegal address, an ECC error, …).
    pub fault: Option<crate::oom::failure::FaultKind>,
}

impl Parsed {
    pub fn into_failure(self, at_ms: u64, log: &str, pid: Option<u32>) -> Failure {
        Failure {
            at_ms,
            log: log.to_string(),
            line: self.line,
            pid,
            message: self.message,
            source: Some(self.dialect),
            allocator: self.allocator,
            numbers: self.numbers,
            fault: self.fault,
        }
    }
}

/// How a matched line takes part in a failure event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The whole failure is on this line.
    Complete,
    /// A dump follows: open a window.
    Header,
    /// The error raised after a dump: joins the open window.
    Final,
    /// A bare CUDA error: part of a nearby framework failure if there is one.
    Raw,
}

/// Which repeats count as the same failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    Pytorch,
    Bfc,
    Async,
    Xla,
    Cupy,
    Raw,
    Fault,
}

/// What one line said.
#[derive(Debug)]
pub(crate) struct Event {
    pub kind: Kind,
    pub family: Family,
    pub dialect: Dialect,
    pub allocator: Option<Allocator>,
    pub numbers: Numbers,
    /// Byte offset where the failure's own text starts (log prefixes dropped).
    pub start: usize,
    /// Identifies a repeat when the request alone does not.
    pub key: Option<String>,
    /// A memory fault that is not an OOM.
    pub fault: Option<crate::oom::failure::FaultKind>,
}

#[derive(Debug, Clone, PartialEq)]
struct Sig {
    family: Family,
    request: Option<Size>,
    key: Option<String>,
}

impl Sig {
    fn of(e: &Event) -> Sig {
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
struct Pending {
    parsed: Parsed,
    sigs: Vec<Sig>,
    idle: u32,
    last: u64,
}

/// The parser of one log; keep one per followed file.
#[derive(Debug, Default)]
pub struct OomParser {
    pending: Option<Pending>,
    /// Recently reported failures: (last line, signature).
    recent: VecDeque<(u64, Sig)>,
}

impl OomParser {
    pub fn new() -> Self {
        OomParser::default()
    }

    /// Reads one line (without its newline); failures that completed are pushed to `out`.
    pub fn feed(&mut self, line_no: u64, raw: &[u8], out: &mut Vec<Parsed>) {
        let text = clean(raw.get(..MAX_LINE).unwrap_or(raw));
        self.recent
            .retain(|(l, _)| line_no.saturating_sub(*l) <= DUP_LINES);
        let event = if worth_parsing(&text) {
            detect(&text)
        } else {
            None
        }
        .or_else(|| fault::parse(&text));
        match event {
            Some(e) => self.handle(line_no, &text, e, out),
            None => self.unmatched(line_no, &text, out),
        }
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

    fn unmatched(&mut self, line_no: u64, text: &str, out: &mut Vec<Parsed>) {
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

    fn handle(&mut self, line_no: u64, text: &str, e: Event, out: &mut Vec<Parsed>) {
        let sig = Sig::of(&e);
        match e.kind {
            Kind::Header => {
                self.flush(out);
                self.pending = Some(Pending {
                    parsed: parsed(line_no, text, e),
                    sigs: vec![sig],
                    idle: 0,
                    last: line_no,
                });
            }
            Kind::Final if self.pending.is_some() => {
                if let Some(p) = &mut self.pending {
                    if e.dialect == Dialect::Jax {
                        p.parsed.dialect = Dialect::Jax;
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
                    out.push(parsed(line_no, text, e));
                }
            }
            Kind::Raw => {
                let near = self
                    .recent
                    .iter()
                    .any(|(l, _)| line_no.saturating_sub(*l) <= RAW_AFTER_LINES);
                if self.pending.is_none() && !near && !self.seen(&sig) {
                    self.remember(line_no, sig);
                    out.push(parsed(line_no, text, e));
                }
            }
        }
    }

    fn seen(&self, sig: &Sig) -> bool {
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

fn detect(text: &str) -> Option<Event> {
    tensorflow::header(text)
        .or_else(|| tensorflow::async_header(text))
        .or_else(|| pytorch::parse(text))
        .or_else(|| tensorflow::tensor(text))
        .or_else(|| jax::parse(text))
        .or_else(|| cupy::parse(text))
        .or_else(|| cuda::parse(text))
}

fn parsed(line: u64, text: &str, e: Event) -> Parsed {
    Parsed {
        line,
        message: cap(text.get(e.start..).unwrap_or(text).trim(), MAX_MESSAGE),
        dialect: e.dialect,
        allocator: e.allocator,
        numbers: e.numbers,
        fault: e.fault,
    }
}

/// Every failure in a whole text (tests and `explain` use it on in-memory logs).
pub fn parse_all(text: &[u8]) -> Vec<Parsed> {
    let mut p = OomParser::new();
    let mut out = Vec::new();
    for (i, line) in text.split(|b| *b == b'\n').enumerate() {
        p.feed(
            u64::try_from(i).unwrap_or(u64::MAX).saturating_add(1),
            line,
            &mut out,
        );
    }
    p.flush(&mut out);
    out
}

#[cfg(test)]
mod tests;
