//! Pure functions from a machine's data and parsed log failures to alerts: analysis reads the
//! model and returns findings; it is never called back from the model.

pub mod classify;
pub mod context;
pub mod explain;
pub mod filling;
pub mod growth;
pub mod maps;
pub mod pool;
pub mod remedy;
pub mod risk;
pub mod warnings;

use crate::model::units::{duration_ms, rate};
use crate::model::{Alert, Level, Machine};
use crate::oom::failure::{Dialect, Failure};
use crate::oom::sizes::human;
use context::Context;

/// Everything to raise after `machine` took in a sample at `at_ms` whose logs showed `failures`
/// and whose source said `notices`: one alert per failure, the notices, then the risks its
/// history and its allocator probes show (each raised once).
pub fn findings(
    machine: &Machine,
    failures: &[Failure],
    notices: &[String],
    at_ms: u64,
) -> Vec<Alert> {
    let mut alerts: Vec<Alert> = failures
        .iter()
        .map(|f| alert_for_failure(f, machine))
        .collect();
    alerts.extend(notices.iter().map(|n| Alert {
        at_ms,
        gpu_uuid: None,
        pid: None,
        level: Level::Notice,
        class: "notice".into(),
        confidence: None,
        title: n.clone(),
        evidence: Vec::new(),
        remedy: None,
    }));
    let risks = warnings::scan(machine, &alerts, at_ms);
    alerts.extend(risks);
    alerts
}

/// The alert for a failure read from a log, classified against the machine at that moment.
pub fn alert_for_failure(f: &Failure, machine: &Machine) -> Alert {
    let ctx = Context::from_machine(f, machine);
    let v = classify::classify(f, &ctx);
    let remedy = remedy::remedy(f, &v, &ctx);
    let who = f.pid.map_or_else(String::new, |p| format!("pid {p} "));
    let dialect = f.source.map_or("GPU", Dialect::label);
    let likely = match v.confidence {
        classify::Confidence::Certain => "",
        classify::Confidence::Likely => " (likely)",
    };
    let mut evidence = v.evidence.clone();
    if let Some(p) = ctx.process_memory {
        evidence.push(format!("the process held {}", human(p)));
    }
    if let Some(at_failure) = f
        .pid
        .and_then(|p| maps::at_failure(machine, p, ctx.gpu_uuid.as_deref(), f.at_ms))
    {
        evidence.insert(0, at_failure);
    }
    evidence.push(format!("{} line {}", f.log, f.line));
    let mut remedy = remedy;
    let mut after = "";
    if let Some(c) = leaked(f, &v, machine) {
        after = " after a leak";
        evidence.insert(
            0,
            format!(
                "a leak: its allocated + stranded memory rose from {} to {} over {} ({}) with nothing released",
                human(c.from),
                human(c.to),
                duration_ms(c.span_ms),
                rate(c.rate)
            ),
        );
        let pid = f.pid.unwrap_or_default();
        remedy = match v.class {
            classify::Class::DeviceFull => format!("{} {remedy}", growth::leak_remedy(pid)),
            _ => growth::leak_remedy(pid),
        };
    }
    Alert {
        at_ms: f.at_ms,
        gpu_uuid: ctx.gpu_uuid,
        pid: f.pid,
        level: Level::Failure,
        class: v.class.as_str().into(),
        confidence: Some(v.confidence.as_str().into()),
        title: format!(
            "{who}{dialect} OOM: {}{after}{likely}, {}",
            v.class.as_str(),
            v.headline
        ),
        evidence,
        remedy: Some(remedy),
    }
}

/// The leak a failure ended, when the failing process's probe saw one: a limit reached (its own or
/// the GPU's) by memory that climbed with nothing released.
fn leaked(f: &Failure, v: &classify::Verdict, machine: &Machine) -> Option<growth::Climb> {
    if !matches!(
        v.class,
        classify::Class::PoolLimit | classify::Class::DeviceFull
    ) {
        return None;
    }
    let pid = f.pid?;
    machine
        .processes
        .values()
        .filter(|t| t.sample.pid == pid)
        .find_map(|t| growth::climb(t.pool_history.as_ref()?, f.at_ms))
}

#[cfg(test)]
mod tests;
