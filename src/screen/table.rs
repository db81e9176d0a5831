//! The process table's order and filter, and the rows they give on a machine.

use crate::model::{Machine, ProcessTrack};
use crate::screen::{ChartData, Screen};

/// The columns the process table can be sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    DeviceMemory,
    Growth,
    Vms,
    Pid,
    Gpu,
}

impl Sort {
    pub fn label(self) -> &'static str {
        match self {
            Sort::DeviceMemory => "device memory",
            Sort::Growth => "growth",
            Sort::Vms => "VMS",
            Sort::Pid => "PID",
            Sort::Gpu => "GPU",
        }
    }

    pub(crate) fn next(self) -> Sort {
        match self {
            Sort::DeviceMemory => Sort::Growth,
            Sort::Growth => Sort::Vms,
            Sort::Vms => Sort::Pid,
            Sort::Pid => Sort::Gpu,
            Sort::Gpu => Sort::DeviceMemory,
        }
    }
}

/// The process filter in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    Pid(u32),
    /// Case-insensitive text matched against command, user, container and job id.
    Text(String),
    /// `gpumon run`'s command: its PID and every process whose output goes to its log (the
    /// children it started inherit it). `log` is the absolute path.
    Run {
        pid: u32,
        log: String,
    },
}

impl Filter {
    /// Digits are a PID; anything else is text; blank is no filter.
    pub fn parse(text: &str) -> Option<Filter> {
        let t = text.trim();
        if t.is_empty() {
            None
        } else if let Ok(pid) = t.parse() {
            Some(Filter::Pid(pid))
        } else {
            Some(Filter::Text(t.to_lowercase()))
        }
    }

    pub fn label(&self) -> String {
        match self {
            Filter::Pid(p) => format!("pid {p}"),
            // Text given with `--filter` may hold a tab or another control character: shown
            // escaped, so it never moves what is drawn after it.
            Filter::Text(t) => format!("\"{}\"", crate::sample::pool_map::printable(t, 64)),
            Filter::Run { pid, .. } => format!("run pid {pid}"),
        }
    }

    pub(crate) fn matches(&self, t: &ProcessTrack) -> bool {
        match self {
            Filter::Pid(p) => t.sample.pid == *p,
            Filter::Text(text) => {
                [&t.sample.command, &t.sample.user]
                    .iter()
                    .any(|r| r.value().is_some_and(|v| v.to_lowercase().contains(text)))
                    || t.sample.container.value().is_some_and(|c| {
                        c.short.to_lowercase().contains(text)
                            || c.full.to_lowercase().contains(text)
                    })
                    || t.sample.rank.as_ref().is_some_and(|r| {
                        r.job
                            .as_deref()
                            .is_some_and(|j| j.to_lowercase().contains(text))
                    })
            }
            Filter::Run { pid, log } => {
                t.sample.pid == *pid || t.sample.log.value().is_some_and(|l| l.contains(log))
            }
        }
    }
}

impl Screen {
    /// Recomputes the visible rows (exited processes after the running ones; in the job view,
    /// grouped by job) and keeps the selection on a visible row.
    pub(crate) fn derive_rows(&mut self, machine: &Machine) {
        let mut rows: Vec<&ProcessTrack> = machine
            .processes
            .values()
            .filter(|t| self.focus.as_ref().is_none_or(|f| &t.sample.gpu_uuid == f))
            .filter(|t| self.filter.as_ref().is_none_or(|f| f.matches(t)))
            .collect();
        let gpu_index =
            |t: &ProcessTrack| machine.gpus.get(&t.sample.gpu_uuid).map(|g| g.sample.index);
        rows.sort_by(|a, b| {
            let by = match self.sort {
                Sort::DeviceMemory => b
                    .sample
                    .device_memory
                    .get()
                    .cmp(&a.sample.device_memory.get()),
                Sort::Growth => b
                    .growth
                    .unwrap_or(f64::MIN)
                    .total_cmp(&a.growth.unwrap_or(f64::MIN)),
                Sort::Vms => b.sample.vms.get().cmp(&a.sample.vms.get()),
                Sort::Pid => a.sample.pid.cmp(&b.sample.pid),
                Sort::Gpu => gpu_index(a).cmp(&gpu_index(b)),
            };
            let exited = a.exited_ms.is_some().cmp(&b.exited_ms.is_some());
            exited.then(by).then_with(|| a.key.cmp(&b.key))
        });
        if self.by_job {
            super::jobs::group(machine, &mut rows, &mut self.job_lines);
        } else {
            self.job_lines.clear();
        }
        let old_pos = self
            .selected
            .as_ref()
            .and_then(|k| self.rows.iter().position(|r| r == k));
        // Reuse the previous rows' keys (and their UUID strings): no allocation per row per tick.
        self.rows.truncate(rows.len());
        for (row, t) in self.rows.iter_mut().zip(&rows) {
            row.gpu_uuid.clone_from(&t.key.gpu_uuid);
            row.pid = t.key.pid;
            row.start_time = t.key.start_time;
        }
        let kept = self.rows.len();
        self.rows.extend(rows[kept..].iter().map(|t| t.key.clone()));
        let still_there = self
            .selected
            .as_ref()
            .is_some_and(|k| self.rows.contains(k));
        if !still_there {
            let pos = old_pos.unwrap_or(0).min(self.rows.len().saturating_sub(1));
            self.selected = self.rows.get(pos).cloned();
        }
        self.derive_alerts(machine);
        self.chart = ChartData::of(
            machine,
            self.focus.as_deref(),
            self.selected.as_ref(),
            self.scale,
            self.zoom,
        );
        self.mig = super::mig::rows(machine);
    }
}
