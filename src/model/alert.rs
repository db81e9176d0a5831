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
    /// Worth knowing, threatening nothing (a preallocation that crowds no other process): shown
    /// without the warning sign and not counted among a GPU's alerts.
    Info,
    /// Something the source ignored, said once (a probe file it did not trust, and why).
    Notice,
}

impl Level {
    /// Rank for "the worst alert first": a failure, then a suspected risk, information, notices.
    pub fn severity(self) -> u8 {
        match self {
            Level::Failure => 3,
            Level::Suspected => 2,
            Level::Info => 1,
            Level::Notice => 0,
        }
    }

    /// Whether it wears the warning sign and counts as an alert of its GPU.
    pub fn warns(self) -> bool {
        matches!(self, Level::Failure | Level::Suspected)
    }

    /// The word for it in text output, on screen and in the docs: the JSON value too
    /// (docs/guide/alerts.md#levels).
    pub fn word(self) -> &'static str {
        match self {
            Level::Failure => "failure",
            Level::Suspected => "suspected",
            Level::Info => "info",
            Level::Notice => "notice",
        }
    }
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
