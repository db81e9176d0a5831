//! Why a process that is still on screen has exited: an allocation failure read from its log,
//! `gpumon run`'s own exit status, or a suspected failure; and the process an alert is about.

use crate::analysis::gpu_events::FAULT_CLASSES;
use crate::model::{Alert, Level, Machine, ProcessTrack};
use crate::screen::{Pane, RunEnd, State};

/// What is known of why a process exited.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cause<'a> {
    /// A failure read from a log for this pid.
    Failure(&'a Alert),
    /// `gpumon run`'s command: how it ended.
    Run(RunEnd),
    /// It exited while growing on a full GPU, and no log said why.
    Suspected(&'a Alert),
    Unknown,
}

impl Cause<'_> {
    /// "OOM: fragmentation", "fault: illegal-address", "Xid", "killed by SIGKILL", "exited".
    pub fn label(&self) -> String {
        match self {
            Cause::Failure(a) if FAULT_CLASSES.contains(&a.class.as_str()) => {
                format!("fault: {}", a.class)
            }
            Cause::Failure(a) if a.class == "xid" => "Xid".into(),
            Cause::Failure(a) => format!("OOM: {}", a.class),
            Cause::Run(end) => end.describe(),
            Cause::Suspected(_) => "possibly OOM (no log seen)".into(),
            Cause::Unknown => "exited".into(),
        }
    }

    /// The alert that explains it, if one does.
    pub fn alert(&self) -> Option<&Alert> {
        match self {
            Cause::Failure(a) | Cause::Suspected(a) => Some(a),
            Cause::Run(_) | Cause::Unknown => None,
        }
    }
}

/// The newest alert about process `t` (its pid, its GPU or none, during its life).
fn alert_of<'a>(machine: &'a Machine, t: &ProcessTrack, wanted: Level) -> Option<&'a Alert> {
    machine.alerts.iter().find(|a| {
        a.level == wanted
            && a.pid == Some(t.key.pid)
            && a.gpu_uuid.as_ref().is_none_or(|g| *g == t.key.gpu_uuid)
            && a.at_ms >= t.first_seen_ms
            && (wanted == Level::Failure || a.class == "exit-no-log")
    })
}

impl State {
    /// Why `t` exited; `None` while it runs.
    pub fn exit_cause(&self, t: &ProcessTrack) -> Option<Cause<'_>> {
        t.exited_ms?;
        let machine = self.machine();
        let run_end = self
            .screen
            .run
            .as_ref()
            .filter(|r| r.pid == t.key.pid)
            .and_then(|r| r.ended);
        Some(if let Some(a) = alert_of(machine, t, Level::Failure) {
            Cause::Failure(a)
        } else if let Some(end) = run_end {
            Cause::Run(end)
        } else if let Some(a) = alert_of(machine, t, Level::Suspected) {
            Cause::Suspected(a)
        } else {
            Cause::Unknown
        })
    }

    /// The process alert `a` is about: on its GPU (when it names one), the newest with its pid.
    pub fn process_of(&self, a: &Alert) -> Option<&ProcessTrack> {
        let pid = a.pid?;
        self.machine()
            .processes
            .values()
            .filter(|t| t.key.pid == pid)
            .filter(|t| a.gpu_uuid.as_ref().is_none_or(|g| *g == t.key.gpu_uuid))
            .max_by_key(|t| t.first_seen_ms)
    }

    /// Enter on the alert open whole: selects its process in the table (clearing a focus or
    /// filter that hides it) and closes the alert, or says why it cannot.
    pub(crate) fn select_alert_process(&mut self) {
        let found = self
            .open_alert()
            .map(|a| (a.pid, self.process_of(a).map(|t| t.key.clone())));
        let Some((pid, key)) = found else {
            return;
        };
        let Some(key) = key else {
            self.screen.status = Some(match pid {
                Some(pid) => format!("pid {pid} is not in the table (gone, or never on a GPU)"),
                None => "this alert is about a GPU, not a process".into(),
            });
            return;
        };
        if !self.screen.rows.contains(&key) {
            self.screen.focus = None;
            self.screen.filter = None;
            self.derive_rows();
        }
        self.screen.selected = Some(key);
        self.screen.pane = Pane::Processes;
        self.screen.alert_open = None;
    }
}

#[cfg(test)]
mod tests {
    use crate::model::{Config, Event};
    use crate::sample::{Framework, Sample};
    use crate::screen::{Msg, RunEnd, RunInfo, State};
    use crate::source::scripted::build::{GIB, gpu, machine, process};

    /// `gpumon run`'s command, listed once then gone: its cause is how the command ended.
    #[test]
    fn the_run_commands_end_is_its_cause() {
        let mut state = State::new(Config::new(1000, 60_000));
        state.screen.run = Some(RunInfo::new(42, "python job.py".into(), "run.log".into()));
        state.update(Msg::from(Event::Started(machine())));
        let g = gpu(0, 80 * GIB, 4 * GIB, GIB);
        let listed = vec![process(42, &g, GIB, Framework::Pytorch, "python job.py")];
        for (k, processes) in [listed, Vec::new()].into_iter().enumerate() {
            state.update(Msg::from(Event::Sample(Sample {
                at_ms: 1000 * (k as u64 + 1),
                gpus: vec![g.clone()],
                processes,
                ..Default::default()
            })));
        }
        let cause = |s: &State| {
            let t = s.machine().processes.values().next().unwrap();
            s.exit_cause(t).map(|c| c.label())
        };
        assert_eq!(cause(&state).as_deref(), Some("exited"));
        state.update(Msg::RunEnded(RunEnd::Signaled(9)));
        assert_eq!(cause(&state).as_deref(), Some("killed by SIGKILL"));
    }
}
