//! The streaming OOM parser: fed a log line by line, it yields one [`Parsed`] per failure event:
//! an OOM, a memory fault, or a distributed job's event (`dist/`: a watchdog timeout, a
//! launcher's word on a rank).
//!
//! A header that a dump follows (TF/XLA BFC, cuda_malloc_async, NCCL) opens a window that
//! collects the dump's numbers and the later error line of the same failure; the window closes
//! after [`IDLE_LINES`] unrelated lines, at the next header, or on [`OomParser::flush`]. A failure
//! printed again (a traceback repeating the message) within [`DUP_LINES`] lines is not reported
//! twice. Windows and repeats are kept per rank prefix (`prefix.rs`, `lane.rs`): ranks that share
//! one log do not disturb each other.

mod cuda;
mod cupy;
mod detect;
pub mod dist;
pub mod failure;
pub mod fault;
mod jax;
mod lane;
mod nccl;
mod parsed;
pub mod prefix;
mod pytorch;
mod runs;
mod screen;
pub mod sizes;
pub mod stamp;
mod tensorflow;
pub mod xid;

use std::sync::LazyLock;

use regex_lite::Regex;

use crate::oom::failure::{Allocator, Dialect, Numbers};
use dist::{Dist, DistReader, Found, NcclCause};
use lane::{Lane, LaneKey};
pub use parsed::Parsed;
use stamp::Seen;

/// Bytes of a line that are read; the rest of a longer line is dropped.
pub const MAX_LINE: usize = 16 * 1024;
/// Characters of a failure's message kept.
pub const MAX_MESSAGE: usize = 600;
/// Unrelated lines after which an open dump window closes.
pub const IDLE_LINES: u32 = 64;
/// Lines within which a repeat of a failure is the same failure.
pub const DUP_LINES: u64 = 400;

/// Compiles a pattern written in this crate (a bad one is a bug caught by every test).
pub(crate) fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("static regex")
}

static ANSI: LazyLock<Regex> = LazyLock::new(|| {
    re(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
});

/// A log line as text: invalid UTF-8 replaced, colour codes and control characters dropped.
pub fn clean(raw: &[u8]) -> String {
    // Printable ASCII (nearly every line): nothing to replace or drop, one pass and one copy.
    if raw.iter().all(|b| (0x20..0x7f).contains(b) || *b == b'\t') {
        return String::from_utf8_lossy(raw).trim_end().to_string();
    }
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
    Nccl,
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

/// Lanes (rank prefixes) one log keeps at once; the one read least recently gives way.
const MAX_LANES: usize = 64;
/// A NCCL error this close after a NCCL OOM (in any lane) is that OOM said again.
const NCCL_OOM_LINES: u64 = 400;

/// The parser of one log; keep one per followed file.
#[derive(Debug, Default)]
pub struct OomParser {
    lanes: Vec<Lane>,
    dist: DistReader,
    /// The line of the last NCCL OOM, and the OOM's rank.
    nccl_oom: Option<(u64, Option<u32>)>,
    /// Lines read.
    lines: u64,
    /// When the line being read reached the disk (`feed_seen`).
    seen: Seen,
}

impl OomParser {
    pub fn new() -> Self {
        OomParser::default()
    }

    /// Reads one line (without its newline); failures that completed are pushed to `out`.
    pub fn feed(&mut self, line_no: u64, raw: &[u8], out: &mut Vec<Parsed>) {
        self.feed_seen(line_no, raw, Seen::default(), out);
    }

    /// [`OomParser::feed`] for a line that reached the disk as `seen` says (a followed log): a
    /// failure it starts keeps that, and the time the line starts with.
    pub fn feed_seen(&mut self, line_no: u64, raw: &[u8], seen: Seen, out: &mut Vec<Parsed>) {
        self.lines = line_no;
        self.seen = seen;
        let text = clean(raw.get(..MAX_LINE).unwrap_or(raw));
        let prefix = prefix::split(&text);
        let (body, key, rank, local) = match &prefix {
            Some(p) => {
                let key = match (p.rank, p.local_rank) {
                    (Some(r), _) => LaneKey::Rank(r),
                    (None, Some(l)) => LaneKey::Local(l),
                    _ => LaneKey::Unread(unread_key(&p.text)),
                };
                (p.body, key, p.rank, p.local_rank)
            }
            None => (text.as_str(), LaneKey::None, None, None),
        };
        let said = prefix.as_ref().map(|p| p.text.clone());
        // Inside torchrun's summary, a rank's error quoted in its traceback is no new failure.
        let read = self.dist.in_block();
        if read {
            let mut found = Vec::new();
            let took = self.dist.feed(line_no, body, rank, &mut found);
            for f in found {
                self.dist_event(line_no, f, (local, said.clone()), Some(&text), out);
            }
            if took {
                return;
            }
        }
        // Long runs of digits collapsed once, before any pattern reads the line (`runs.rs`).
        let runs = runs::collapse(body);
        let event = detect::event(body, &runs);
        let lane = self.lane(key, out);
        // An unprefixed line saying again what a rank's line said is that failure, relayed.
        let relayed = key == LaneKey::None
            && event.as_ref().is_some_and(|e| {
                e.kind != Kind::Header
                    && self
                        .lanes
                        .iter()
                        .any(|l| l.key != LaneKey::None && l.seen(&lane::Sig::of(e)))
            });
        let l = &mut self.lanes[lane];
        l.forget_old(line_no);
        match event {
            Some(_) if relayed => {}
            Some(e) => {
                let nccl = e.family == Family::Nccl && e.kind == Kind::Header;
                let mut p = parsed(line_no, body, &e);
                (p.rank, p.local_rank, p.prefix) = (rank, local, said);
                (p.seen, p.written) = (seen, written(body, &text));
                if nccl {
                    let said_before = nccl_error_rank(out, line_no);
                    p.rank = p.rank.or(said_before);
                }
                l.handle(line_no, e, p, out);
                if nccl {
                    self.nccl_oom = Some((line_no, rank));
                }
            }
            None => {
                l.unmatched(line_no, &runs.text, out);
                if !read {
                    let mut found = Vec::new();
                    self.dist.feed(line_no, body, rank, &mut found);
                    for f in found {
                        self.dist_event(line_no, f, (local, said.clone()), Some(&text), out);
                    }
                }
            }
        }
        if self.lanes.iter().any(|l| l.pending.is_some()) {
            for l in &mut self.lanes {
                l.close_stale(line_no, out);
            }
        }
    }

    /// Closes every open window and block (the log went quiet, or ended).
    pub fn flush(&mut self, out: &mut Vec<Parsed>) {
        for l in &mut self.lanes {
            l.flush(out);
        }
        let mut found = Vec::new();
        self.dist.flush(&mut found);
        for f in found {
            self.dist_event(self.lines, f, (None, None), None, out);
        }
    }

    /// The lane of `key`, made (and the oldest given up, its window closed) when new.
    fn lane(&mut self, key: LaneKey, out: &mut Vec<Parsed>) -> usize {
        if let Some(i) = self.lanes.iter().position(|l| l.key == key) {
            return i;
        }
        if self.lanes.len() == MAX_LANES
            && let Some(oldest) = (0..self.lanes.len()).min_by_key(|i| self.lanes[*i].last)
        {
            // Its window, if any, closes now.
            self.lanes.swap_remove(oldest).flush(out);
        }
        self.lanes.push(Lane::new(key));
        self.lanes.len() - 1
    }

    /// A distributed event becomes a failure; a NCCL CUDA error right after a NCCL OOM is that
    /// OOM (it lends the OOM its rank when the OOM's line had none). `line` is the text of the
    /// line read (none at a flush): an event of that line is timed by it; one of an earlier line
    /// was on disk by the time this one was, no more is known.
    fn dist_event(
        &mut self,
        line_no: u64,
        f: Found,
        (local, said): (Option<u32>, Option<String>),
        line: Option<&str>,
        out: &mut Vec<Parsed>,
    ) {
        if matches!(
            f.dist,
            Dist::NcclError {
                cause: NcclCause::Cuda,
                ..
            }
        ) && let Some((at, oom_rank)) = self.nccl_oom
            && line_no.saturating_sub(at) <= NCCL_OOM_LINES
        {
            if oom_rank.is_none() && f.rank.is_some() {
                for l in &mut self.lanes {
                    if let Some(p) = l.pending.as_mut().filter(|p| p.family == Family::Nccl) {
                        p.parsed.rank = p.parsed.rank.or(f.rank);
                    }
                }
            }
            return;
        }
        let dialect = match f.dist {
            Dist::WatchdogTimeout { .. } | Dist::NcclError { .. } => Some(Dialect::Nccl),
            Dist::Torchrun { .. } | Dist::AgentFailed { .. } => Some(Dialect::Pytorch),
            Dist::JaxTasks { .. } | Dist::JaxFatal => Some(Dialect::Jax),
            _ => None,
        };
        let here = line.filter(|_| f.line.is_none_or(|l| l == line_no));
        let seen = match here {
            Some(_) => self.seen,
            None => Seen {
                after_ms: None,
                ..self.seen
            },
        };
        out.push(Parsed {
            line: f.line.unwrap_or(line_no),
            message: f.message,
            dialect,
            allocator: None,
            numbers: Numbers::default(),
            fault: None,
            rank: f.rank,
            local_rank: f.local_rank.or(local),
            prefix: said,
            dist: Some(f.dist),
            seen,
            written: here.and_then(|l| written(prefix::split(l).map_or(l, |p| p.body), l)),
        });
    }
}

/// The rank of a NCCL CUDA error reported just before a NCCL OOM (`unhandled cuda error` …
/// `Last error:` … `Cuda failure 'out of memory'`), taken out of `out`: the OOM says it.
fn nccl_error_rank(out: &mut Vec<Parsed>, line_no: u64) -> Option<u32> {
    let i = out.iter().rposition(|p| {
        matches!(
            p.dist,
            Some(Dist::NcclError {
                cause: NcclCause::Cuda,
                ..
            })
        ) && line_no.saturating_sub(p.line) <= 10
    })?;
    out.remove(i).rank
}

/// The time a line starts with: after its rank prefix (`body`), or before it.
fn written(body: &str, text: &str) -> Option<stamp::Written> {
    stamp::read(body).or_else(|| stamp::read(text))
}

fn parsed(line: u64, text: &str, e: &Event) -> Parsed {
    Parsed {
        line,
        message: cap(text.get(e.start..).unwrap_or(text).trim(), MAX_MESSAGE),
        dialect: Some(e.dialect),
        allocator: e.allocator,
        numbers: e.numbers.clone(),
        fault: e.fault,
        rank: None,
        local_rank: None,
        prefix: None,
        dist: None,
        seen: Seen::default(),
        written: None,
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

/// A lane's key for a prefix whose number is no rank: its text, hashed.
fn unread_key(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests;
