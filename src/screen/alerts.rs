//! Which alerts the alert list shows: those that concern what the screen is narrowed to (the GPU
//! in focus, the filter), with a count of the rest. Each narrowing is one criterion; an alert
//! with no GPU (or no pid) concerns every GPU (or every process) and always stays.

use std::collections::BTreeSet;

use crate::model::{Alert, Machine};
use crate::screen::{Filter, Screen};

/// One thing the screen is narrowed to.
enum Criterion<'a> {
    /// The GPU in focus (by UUID).
    Gpu(&'a str),
    /// The PIDs the filter lets through.
    Pids(BTreeSet<u32>),
}

impl Criterion<'_> {
    fn concerns(&self, a: &Alert) -> bool {
        match self {
            Criterion::Gpu(uuid) => a.gpu_uuid.as_deref().is_none_or(|g| g == *uuid),
            Criterion::Pids(pids) => a.pid.is_none_or(|p| pids.contains(&p)),
        }
    }
}

impl Screen {
    /// Recomputes `alert_rows` (indices into the machine's alerts) and how many are hidden.
    pub(crate) fn derive_alerts(&mut self, machine: &Machine) {
        let mut criteria = Vec::new();
        if let Some(uuid) = &self.focus {
            criteria.push(Criterion::Gpu(uuid));
        }
        if let Some(filter) = &self.filter {
            let pids = match filter {
                Filter::Pid(p) => BTreeSet::from([*p]),
                _ => machine
                    .processes
                    .values()
                    .filter(|t| filter.matches(t))
                    .map(|t| t.sample.pid)
                    .collect(),
            };
            criteria.push(Criterion::Pids(pids));
        }
        // One row a condition: the same alert raised again (or by another source, with the
        // same words) is listed once, its newest.
        let mut seen = BTreeSet::new();
        let mut distinct = 0;
        self.alert_rows.clear();
        for (i, a) in machine.alerts.iter().enumerate() {
            if !seen.insert((
                a.class.as_str(),
                a.pid,
                a.gpu_uuid.as_deref(),
                a.title.as_str(),
            )) {
                continue;
            }
            distinct += 1;
            if criteria.iter().all(|c| c.concerns(a)) {
                self.alert_rows.push(i);
            }
        }
        let hidden = distinct - self.alert_rows.len();
        // "+3 on other GPUs", "+3 hidden by the filter".
        self.alerts_hidden = (hidden > 0).then(|| {
            let why = match (self.focus.is_some(), self.filter.is_some()) {
                (true, false) => "on other GPUs",
                (false, true) => "hidden by the filter",
                _ => "hidden by focus and filter",
            };
            format!("+{hidden} {why}")
        });
        self.alert_selected = self
            .alert_selected
            .min(self.alert_rows.len().saturating_sub(1));
    }
}

/// The alerts the list shows, in order.
pub fn shown<'a>(screen: &'a Screen, machine: &'a Machine) -> impl Iterator<Item = &'a Alert> {
    screen
        .alert_rows
        .iter()
        .filter_map(|i| machine.alerts.get(*i))
}
