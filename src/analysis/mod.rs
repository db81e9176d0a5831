//! Pure functions from histories and parsed log failures to alerts.

pub mod failure;

use serde::{Deserialize, Serialize};

/// How sure gpumon is of an alert.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// An allocation failure seen in a log.
    Failure,
    /// A risk inferred from the memory history alone.
    Suspected,
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

use crate::model::State;
use failure::Failure;

/// The alert for a failure read from a log, classified against the state at that moment.
pub fn alert_for_failure(f: &Failure, _state: &State) -> Alert {
    Alert {
        at_ms: f.at_ms,
        gpu_uuid: None,
        pid: f.pid,
        level: Level::Failure,
        class: "unknown".into(),
        confidence: None,
        title: f.message.clone(),
        evidence: vec![format!("{} line {}", f.log, f.line)],
        remedy: None,
    }
}

/// Risks seen in the memory history alone (each raised once).
pub fn scan_history(_state: &State, _at_ms: u64) -> Vec<Alert> {
    Vec::new()
}
