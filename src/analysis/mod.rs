//! Pure functions from histories and parsed log failures to alerts.

pub mod classify;
pub mod context;
pub mod explain;
pub mod failure;
pub mod oom;
pub mod remedy;
pub mod warnings;

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
use context::Context;
use failure::Failure;

/// The alert for a failure read from a log, classified against the state at that moment.
pub fn alert_for_failure(f: &Failure, state: &State) -> Alert {
    let ctx = Context::from_state(f, state);
    let v = classify::classify(f, &ctx);
    let remedy = remedy::remedy(f, &v, &ctx);
    let who = f.pid.map_or_else(String::new, |p| format!("pid {p} "));
    let dialect = f.source.map_or("GPU", failure::Dialect::label);
    let likely = match v.confidence {
        classify::Confidence::Certain => "",
        classify::Confidence::Likely => " (likely)",
    };
    let mut evidence = v.evidence;
    if let Some(p) = ctx.process_memory {
        evidence.push(format!("the process held {}", oom::sizes::human(p)));
    }
    evidence.push(format!("{} line {}", f.log, f.line));
    Alert {
        at_ms: f.at_ms,
        gpu_uuid: ctx.gpu_uuid,
        pid: f.pid,
        level: Level::Failure,
        class: v.class.as_str().into(),
        confidence: Some(v.confidence.as_str().into()),
        title: format!(
            "{who}{dialect} OOM: {}{likely}, {}",
            v.class.as_str(),
            v.headline
        ),
        evidence,
        remedy: Some(remedy),
    }
}

/// Risks seen in the memory history alone (each raised once).
pub fn scan_history(state: &State, at_ms: u64) -> Vec<Alert> {
    warnings::scan(state, at_ms)
}

#[cfg(test)]
mod tests;
