//! One failure as the parser found it in a log, before it is placed in time and given its log's
//! name and process (`Parsed::into_failure`).

use super::dist::Dist;
use super::failure::{Allocator, Dialect, Failure, FaultKind, Numbers};
use super::stamp::{Seen, Written};

/// One failure found in a log.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The line its first line was on.
    pub line: u64,
    pub message: String,
    /// The framework whose wording it was (`None`: a launcher's or a scheduler's line).
    pub dialect: Option<Dialect>,
    pub allocator: Option<Allocator>,
    pub numbers: Numbers,
    /// A memory fault that is not an OOM (an illegal address, an ECC error, …).
    pub fault: Option<FaultKind>,
    /// The rank it is about: the line's `[rankN]:` prefix, or the event's own words.
    pub rank: Option<u32>,
    /// The local rank a `[defaultN]:` prefix (or a launcher's line) names.
    pub local_rank: Option<u32>,
    /// The line's rank prefix as printed.
    pub prefix: Option<String>,
    /// A distributed job's event (a watchdog timeout, a launcher's word on a rank, …).
    pub dist: Option<Dist>,
    /// When its first line reached the disk, as the reader that fed it saw (`OomParser::feed_seen`;
    /// nothing for a log read whole).
    pub seen: Seen,
    /// The time its first line starts with, as written (`stamp.rs`).
    pub written: Option<Written>,
}

impl Parsed {
    /// The failure, timed `at_ms`, read from `log` (written by `pid`, when known).
    pub fn into_failure(self, at_ms: u64, log: &str, pid: Option<u32>) -> Failure {
        Failure {
            at_ms,
            log: log.to_string(),
            line: self.line,
            pid,
            message: self.message,
            source: self.dialect,
            allocator: self.allocator,
            numbers: self.numbers,
            fault: self.fault,
            rank: self.rank,
            local_rank: self.local_rank,
            prefix: self.prefix,
            dist: self.dist,
            timing: None,
        }
    }
}
