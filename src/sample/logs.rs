//! A followed log the source has not read to its end: its backlog, carried by the sample after
//! the poll that left it (absent once it is caught up, and in older recordings).

use serde::{Deserialize, Serialize};

/// A log left behind by its writer: what is still to read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogBehind {
    /// The log, as failures name it.
    pub log: String,
    /// Bytes on disk not read yet.
    pub bytes: u64,
    /// Since when the first of them has been on disk (ms since the epoch), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_ms: Option<u64>,
}
