//! An allocation failure parsed from a log line (the OOM parsers produce these).

use serde::{Deserialize, Serialize};

/// One allocation failure as read from a log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// When gpumon read it, milliseconds since the epoch.
    pub at_ms: u64,
    /// The log it came from.
    pub log: String,
    /// Line number in that log.
    pub line: u64,
    /// The process whose output the log is, when known.
    pub pid: Option<u32>,
    /// The failure's first line, capped in length.
    pub message: String,
}
