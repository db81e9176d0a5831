//! The signal dialog: `K` (or F9) asks whether to signal the selected process, naming its pid,
//! user, command and GPU memory; `t`, `i` or `9` choose SIGTERM, SIGINT or SIGKILL, Esc cancels.
//! The state only asks: sending is I/O, done by the app loop on `Command::Signal`, after it has
//! re-checked the process by (pid, start time).

use crate::input::Action;
pub use crate::input::Sig;
use crate::model::units;
use crate::screen::{Command, State};

/// A signal for the process identified by `pid` and `start_time` (Unix seconds, as /proc gives
/// it): a process with that pid but another start time is not the one the user chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignalRequest {
    pub pid: u32,
    pub start_time: u64,
    pub signal: Sig,
}

/// The open dialog: what it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignalAsk {
    pub pid: u32,
    pub start_time: u64,
    pub user: String,
    pub command: String,
    /// "GPU0 105.4G", or with n/a.
    pub memory: String,
}

impl State {
    /// `K`: opens the dialog for the selected process, or says in the status line why not.
    pub(crate) fn ask_signal(&mut self) {
        if let Some(reason) = &self.screen.signals_off {
            self.screen.status = Some(format!("signals are off: {reason}"));
            return;
        }
        let Some(t) = self.selected_process() else {
            self.screen.status = Some("no process selected to signal".into());
            return;
        };
        let pid = t.key.pid;
        let refusal = if t.exited_ms.is_some() {
            Some(format!("pid {pid} has already exited"))
        } else if t.key.start_time.is_none() {
            Some(format!(
                "pid {pid}: its start time is unknown, so it cannot be re-checked before a signal"
            ))
        } else {
            None
        };
        let s = &t.sample;
        let ask = t.key.start_time.map(|start_time| SignalAsk {
            pid,
            start_time,
            user: s.user.value().cloned().unwrap_or_else(|| "n/a".into()),
            command: s.command.value().cloned().unwrap_or_else(|| "n/a".into()),
            memory: format!(
                "{} {}",
                self.machine()
                    .gpu(&t.key.gpu_uuid)
                    .map_or_else(|| "GPU ?".into(), |g| format!("GPU{}", g.sample.index)),
                s.device_memory.get().map_or("n/a".into(), units::compact)
            ),
        });
        match refusal {
            Some(text) => self.screen.status = Some(text),
            None => self.screen.signal = ask,
        }
    }

    /// A key while the dialog is open.
    pub(crate) fn answer_signal(&mut self, a: Action) -> Option<Command> {
        let ask = self.screen.signal.as_ref()?;
        let signal = match a {
            Action::SendSignal(sig) => sig,
            Action::Escape => {
                self.screen.signal = None;
                return None;
            }
            _ => return None,
        };
        let request = SignalRequest {
            pid: ask.pid,
            start_time: ask.start_time,
            signal,
        };
        self.screen.status = Some(format!("sending {} to pid {}", signal.name(), ask.pid));
        self.screen.signal = None;
        Some(Command::Signal(request))
    }
}
