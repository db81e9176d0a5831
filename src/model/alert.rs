//! An alert: something the user should know about a machine, with the evidence and the remedy.
//! Analysis makes them; the machine keeps them.

use serde::{Deserialize, Serialize};

/// How sure gpumon is of an alert.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// An allocation failure seen in a log.
    Failure,
    /// A risk inferred from the memory history or the allocator probe's figures.
    Suspected,
    /// Worth knowing, not a risk: nothing is expected to fail (a preallocated pool that crowds
    /// no other process). Never shown as a warning.
    Info,
    /// Something the source ignored, said once (a probe file it did not trust, and why).
    Notice,
}

/// Something the user should know about, with the evidence and what to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    pub at_ms: u64,
    pub gpu_uuid: Option<String>,
    pub pid: Option<u32>,
    pub level: Level,
    /// Machine-readable class, e.g. "fragmentation", "device-full", "preallocation".
    pub class: String,
    /// "certain" or "likely" for classified failures.
    pub confidence: Option<String>,
    /// One line for the alerts panel.
    pub title: String,
    /// The numbers that decided the class.
    pub evidence: Vec<String>,
    pub remedy: Option<String>,
}
