//! Which alerts the alert list shows: those that concern what the screen is narrowed to (the GPU
//! in focus, the filter), with a count of the rest. Each narrowing is one criterion; an alert
//! with no GPU (or no pid) concerns every GPU (or every process) and always stays. And the alert
//! read whole (Enter): which one, and how far it is scrolled.

use std::collections::BTreeSet;

use crate::model::{Alert, Machine};
use crate::screen::{Filter, Pane, Screen, State};

/// The alert read whole, over the screen (Enter on it in the alerts list; Esc closes it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAlert {
    /// Which alert: its time, class and title (its index would move as newer alerts come first).
    pub at_ms: u64,
    pub class: String,
    pub title: String,
    /// Its first row on screen (the view clamps it to the text's end at the screen's size:
    /// `view::alert_view::scroll` turns the scrolling keys into `Action::AlertTop`).
    pub top: usize,
}

impl OpenAlert {
    fn of(a: &Alert) -> OpenAlert {
        OpenAlert {
            at_ms: a.at_ms,
            class: a.class.clone(),
            title: a.title.clone(),
            top: 0,
        }
    }

    fn is(&self, a: &Alert) -> bool {
        a.at_ms == self.at_ms && a.class == self.class && a.title == self.title
    }
}

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
        // One row a condition: the same alert raised again is listed once, its newest.
        let mut distinct = 0;
        self.alert_rows.clear();
        for (i, a) in crate::model::alert::distinct(&machine.alerts) {
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
        // An alert no longer kept (a replay that started again, an old one dropped) closes.
        if self
            .alert_open
            .as_ref()
            .is_some_and(|o| !machine.alerts.iter().any(|a| o.is(a)))
        {
            self.alert_open = None;
        }
    }
}

impl State {
    /// The alert open whole, if one is.
    pub fn open_alert(&self) -> Option<&Alert> {
        let open = self.screen.alert_open.as_ref()?;
        self.machine().alerts.iter().find(|a| open.is(a))
    }

    /// The alert selected in the alerts list.
    pub fn selected_alert(&self) -> Option<&Alert> {
        shown(&self.screen, self.machine()).nth(self.screen.alert_selected)
    }

    /// Enter in the alerts list: the selected alert, read whole.
    pub(crate) fn open_selected_alert(&mut self) {
        if self.screen.pane == Pane::Alerts {
            self.screen.alert_open = self.selected_alert().map(OpenAlert::of);
        }
    }

    /// A click on alert `n` of the list (its position in the rows shown): selects it, or opens
    /// it when it was already selected in the alerts pane.
    pub(crate) fn click_alert(&mut self, n: usize) {
        if n >= self.screen.alert_rows.len() {
            return;
        }
        if self.screen.pane == Pane::Alerts && self.screen.alert_selected == n {
            self.open_selected_alert();
        } else {
            self.screen.pane = Pane::Alerts;
            self.screen.alert_selected = n;
        }
    }
}

/// The alerts the list shows, in order.
pub fn shown<'a>(screen: &'a Screen, machine: &'a Machine) -> impl Iterator<Item = &'a Alert> {
    screen
        .alert_rows
        .iter()
        .filter_map(|i| machine.alerts.get(*i))
}
