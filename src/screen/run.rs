//! The screen's side of `gpumon run`: what it knows about the command, how the command ended,
//! the question asked when the user quits while it still runs (`k` stop it, `l` leave it,
//! Esc stay), and the alerts printed on the terminal once the screen has closed.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use std::collections::BTreeSet;

use crate::input::Action;
use crate::model::{Alert, units};
use crate::sample::pool_map::printable;
use crate::screen::{Command, Filter, State};

/// How long a stopped command has after SIGTERM before SIGKILL.
pub const KILL_AFTER: Duration = Duration::from_secs(5);

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    Exited(i32),
    /// Killed by this signal.
    Signaled(i32),
    /// Its status could not be read.
    Unknown,
}

impl RunEnd {
    pub fn of(status: io::Result<ExitStatus>) -> RunEnd {
        match status {
            Ok(s) => match (s.code(), s.signal()) {
                (Some(code), _) => RunEnd::Exited(code),
                (None, Some(sig)) => RunEnd::Signaled(sig),
                (None, None) => RunEnd::Unknown,
            },
            Err(_) => RunEnd::Unknown,
        }
    }

    /// The status gpumon exits with: the command's, or 128 + the signal that killed it.
    pub fn code(self) -> u8 {
        match self {
            RunEnd::Exited(c) => u8::try_from(c & 0xff).unwrap_or(1),
            RunEnd::Signaled(s) => u8::try_from(128 + (s & 0x7f)).unwrap_or(1),
            RunEnd::Unknown => 1,
        }
    }

    /// "exited with status 3", "killed by SIGTERM".
    pub fn describe(self) -> String {
        match self {
            RunEnd::Exited(c) => format!("exited with status {c}"),
            RunEnd::Signaled(s) => match signal_name(s) {
                Some(name) => format!("killed by {name}"),
                None => format!("killed by signal {s}"),
            },
            RunEnd::Unknown => "ended (its status could not be read)".into(),
        }
    }
}

fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        6 => "SIGABRT",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        15 => "SIGTERM",
        _ => return None,
    })
}

/// The command `gpumon run` started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunInfo {
    pub pid: u32,
    /// A short form of its command line, for the header and footer.
    pub command: String,
    /// Its log, as the user would write the path.
    pub log: String,
    pub ended: Option<RunEnd>,
    /// The quit question is open: keys answer it.
    pub asking: bool,
    /// `k` was answered: waiting for it to end.
    pub stopping: bool,
}

impl RunInfo {
    pub fn new(pid: u32, command: String, log: String) -> RunInfo {
        RunInfo {
            pid,
            command,
            log,
            ended: None,
            asking: false,
            stopping: false,
        }
    }
}

impl State {
    /// What `gpumon run` prints once its screen has closed: the alerts about its command (those
    /// `filter`, the run's own, lets through, and those about no process), oldest first, one
    /// block each: the class, time and title, the evidence's first line, the remedy. What a job
    /// wrote is escaped. Empty when there were none.
    pub fn run_report(&self, filter: &Filter) -> String {
        let machine = self.machine();
        let Some(run) = &self.screen.run else {
            return String::new();
        };
        let pids: BTreeSet<u32> = machine
            .processes
            .values()
            .filter(|t| filter.matches(t))
            .map(|t| t.key.pid)
            .chain([run.pid])
            .collect();
        let mut alerts: Vec<&Alert> = crate::model::alert::distinct(&machine.alerts)
            .map(|(_, a)| a)
            .filter(|a| a.pid.is_none_or(|p| pids.contains(&p)))
            .collect();
        if alerts.is_empty() {
            return String::new();
        }
        alerts.reverse();
        let text = |s: &str| printable(s, 2000);
        let n = alerts.len();
        let mut out = format!(
            "gpumon: {n} alert{} about {} (pid {}), oldest first:\n",
            if n == 1 { "" } else { "s" },
            text(&run.command),
            run.pid
        );
        for a in alerts {
            out.push_str(&format!(
                "\n{}: {} {}\n",
                a.class,
                units::clock(a.at_ms),
                text(&a.title)
            ));
            if let Some(first) = a.evidence.first() {
                let more = match a.evidence.len() - 1 {
                    0 => String::new(),
                    k => format!(" (and {k} more)"),
                };
                out.push_str(&format!("  evidence: {}{more}\n", text(first)));
            }
            if let Some(r) = &a.remedy {
                out.push_str(&format!("  remedy: {}\n", text(r)));
            }
        }
        out
    }

    /// Whether the quit question is open.
    pub fn asking(&self) -> bool {
        self.screen.run.as_ref().is_some_and(|r| r.asking)
    }

    /// `q`: quits, or asks first while the command still runs (and waits while it is stopped).
    pub(crate) fn quit(&mut self) -> Option<Command> {
        match &mut self.screen.run {
            Some(r) if r.ended.is_none() => {
                r.asking = !r.stopping;
                None
            }
            _ => Some(Command::Quit),
        }
    }

    /// A key while the quit question is open.
    pub(crate) fn answer(&mut self, a: Action) -> Option<Command> {
        let r = self.screen.run.as_mut()?;
        match a {
            Action::StopRun => {
                r.asking = false;
                r.stopping = true;
                self.screen.status = Some(format!(
                    "stopping {}: SIGTERM sent, SIGKILL in {}s",
                    r.command,
                    KILL_AFTER.as_secs()
                ));
                Some(Command::StopRun)
            }
            Action::LeaveRun => Some(Command::Quit),
            Action::Escape => {
                r.asking = false;
                None
            }
            _ => None,
        }
    }

    /// The command ended: quits at once when the user was quitting, else says so.
    pub(crate) fn run_ended(&mut self, end: RunEnd) -> Option<Command> {
        let r = self.screen.run.as_mut()?;
        r.ended = Some(end);
        if r.asking || r.stopping {
            return Some(Command::Quit);
        }
        self.screen.status = Some(format!(
            "{} {}; q quits with its status",
            r.command,
            end.describe()
        ));
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Config;
    use crate::screen::Msg;

    fn state() -> State {
        let mut s = State::new(Config::new(1000, 60_000));
        s.screen.run = Some(RunInfo::new(42, "sh".into(), "run.log".into()));
        s
    }

    fn key(s: &mut State, a: Action) -> Option<Command> {
        s.update(Msg::Action(a))
    }

    #[test]
    fn quitting_while_it_runs_asks_and_esc_stays() {
        let mut s = state();
        assert_eq!(key(&mut s, Action::Quit), None);
        assert!(s.asking());
        assert_eq!(key(&mut s, Action::Down), None, "other keys do nothing");
        assert!(s.asking());
        assert_eq!(key(&mut s, Action::Escape), None);
        assert!(!s.asking());
        key(&mut s, Action::Quit);
        assert_eq!(key(&mut s, Action::LeaveRun), Some(Command::Quit));
    }

    #[test]
    fn k_stops_it_and_its_end_quits() {
        let mut s = state();
        key(&mut s, Action::Quit);
        assert_eq!(key(&mut s, Action::StopRun), Some(Command::StopRun));
        assert!(
            s.screen
                .status
                .as_deref()
                .unwrap()
                .starts_with("stopping sh")
        );
        assert_eq!(key(&mut s, Action::Quit), None, "q waits while it stops");
        assert!(!s.asking());
        assert_eq!(
            s.update(Msg::RunEnded(RunEnd::Signaled(15))),
            Some(Command::Quit)
        );
    }

    #[test]
    fn an_end_is_shown_then_q_quits_and_an_open_question_quits_at_once() {
        let mut s = state();
        assert_eq!(s.update(Msg::RunEnded(RunEnd::Exited(3))), None);
        assert_eq!(
            s.screen.status.as_deref(),
            Some("sh exited with status 3; q quits with its status")
        );
        assert_eq!(key(&mut s, Action::Quit), Some(Command::Quit));
        let mut asked = state();
        key(&mut asked, Action::Quit);
        assert_eq!(
            asked.update(Msg::RunEnded(RunEnd::Exited(0))),
            Some(Command::Quit)
        );
        let mut plain = state();
        plain.screen.run = None;
        assert_eq!(key(&mut plain, Action::Quit), Some(Command::Quit));
    }
}
