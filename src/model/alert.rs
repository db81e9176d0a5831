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
    /// The distributed job it is about (`model::Job::id`), when it concerns a rank of one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
}

/// What makes alerts one condition: the same class, process, GPU and words.
type Condition<'a> = (&'a str, Option<u32>, Option<&'a str>, &'a str);

impl Alert {
    fn condition(&self) -> Condition<'_> {
        (
            self.class.as_str(),
            self.pid,
            self.gpu_uuid.as_deref(),
            self.title.as_str(),
        )
    }
}

/// The alerts one per condition, with their index: a condition raised again (or by another
/// source, in the same words) is listed and counted once, its newest (alerts are kept newest
/// first). The alerts panel and the GPUs' counts both go by this, so they agree.
pub fn distinct(alerts: &[Alert]) -> impl Iterator<Item = (usize, &Alert)> {
    let mut seen = std::collections::BTreeSet::new();
    alerts
        .iter()
        .enumerate()
        .filter(move |(_, a)| seen.insert(a.condition()))
}
