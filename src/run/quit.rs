//! The screen's side of `gpumon run`: what it knows about the command, and the question asked
//! when the user quits while the command still runs (`k` stop it, `l` leave it, Esc stay).

use super::RunEnd;
use super::child::KILL_AFTER;
use crate::input::Action;
use crate::model::{Command, State};

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
    /// Whether the quit question is open.
    pub fn asking(&self) -> bool {
        self.run.as_ref().is_some_and(|r| r.asking)
    }

    /// `q`: quits, or asks first while the command still runs (and waits while it is stopped).
    pub(crate) fn quit(&mut self) -> Option<Command> {
        match &mut self.run {
            Some(r) if r.ended.is_none() => {
                r.asking = !r.stopping;
                None
            }
            _ => Some(Command::Quit),
        }
    }

    /// A key while the quit question is open.
    pub(crate) fn answer(&mut self, a: Action) -> Option<Command> {
        let r = self.run.as_mut()?;
        match a {
            Action::StopRun => {
                r.asking = false;
                r.stopping = true;
                self.status = Some(format!(
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
        let r = self.run.as_mut()?;
        r.ended = Some(end);
        if r.asking || r.stopping {
            return Some(Command::Quit);
        }
        self.status = Some(format!(
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
    use crate::model::{Config, Msg};

    fn state() -> State {
        let mut s = State::new(Config::new(1000, 60_000));
        s.run = Some(RunInfo::new(42, "sh".into(), "run.log".into()));
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
        assert!(s.status.as_deref().unwrap().starts_with("stopping sh"));
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
            s.status.as_deref(),
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
        plain.run = None;
        assert_eq!(key(&mut plain, Action::Quit), Some(Command::Quit));
    }
}
