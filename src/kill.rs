//! Sending the signal the user chose in the signal dialog to the very process they chose: the
//! process is pinned with a pidfd, its start time re-read and compared with the one on screen,
//! and only then signalled through the pidfd, so a PID reused meanwhile is never hit.

use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};

use crate::screen::{Sig, SignalRequest};

/// Reads a process's start time (the real one reads /proc/PID/stat; tests use a fake).
pub trait StartTimes: Send + Sync {
    /// Start time of `pid` in Unix seconds, as the samples carry it; `None` when there is no
    /// such process.
    fn start_time(&self, pid: u32) -> Option<u64>;
}

/// What became of a signal request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Sent,
    /// No process has that pid any more.
    Gone,
    /// The pid now belongs to another process (another start time): not signalled.
    Reused,
    PermissionDenied,
    Failed(String),
}

impl Outcome {
    /// The status line: "SIGTERM sent to pid 4312", "pid 4312: permission denied".
    pub fn describe(&self, req: SignalRequest) -> String {
        let (pid, name) = (req.pid, req.signal.name());
        match self {
            Outcome::Sent => format!("{name} sent to pid {pid}"),
            Outcome::Gone => format!("pid {pid} is already gone: {name} not sent"),
            Outcome::Reused => {
                format!("pid {pid} is now another process (PID reused): {name} not sent")
            }
            Outcome::PermissionDenied => format!("pid {pid}: permission denied ({name} not sent)"),
            Outcome::Failed(e) => format!("pid {pid}: {name} failed: {e}"),
        }
    }
}

fn signal(sig: Sig) -> Signal {
    match sig {
        Sig::Term => Signal::TERM,
        Sig::Int => Signal::INT,
        Sig::Kill => Signal::KILL,
    }
}

/// Sends `req` if its process is still the one with its start time.
pub fn send(times: &dyn StartTimes, req: SignalRequest) -> Outcome {
    let errno = |e: Errno| match e {
        Errno::SRCH => Outcome::Gone,
        Errno::PERM | Errno::ACCESS => Outcome::PermissionDenied,
        e => Outcome::Failed(e.to_string()),
    };
    let Some(pid) = i32::try_from(req.pid).ok().and_then(Pid::from_raw) else {
        return Outcome::Gone;
    };
    // While the pidfd is open it names this process, whatever happens to the number.
    let fd = match pidfd_open(pid, PidfdFlags::empty()) {
        Ok(fd) => fd,
        Err(e) => return errno(e),
    };
    match times.start_time(req.pid) {
        None => return Outcome::Gone,
        Some(t) if t != req.start_time => return Outcome::Reused,
        Some(_) => {}
    }
    match pidfd_send_signal(&fd, signal(req.signal)) {
        Ok(()) => Outcome::Sent,
        Err(e) => errno(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Child, Command};

    /// Start times as a table: the fake `StartTimes`.
    struct Fake(Vec<(u32, u64)>);

    impl StartTimes for Fake {
        fn start_time(&self, pid: u32) -> Option<u64> {
            self.0.iter().find(|(p, _)| *p == pid).map(|(_, t)| *t)
        }
    }

    fn sleeper() -> Child {
        Command::new("sleep").arg("30").spawn().unwrap()
    }

    fn term(pid: u32, start_time: u64) -> SignalRequest {
        SignalRequest {
            pid,
            start_time,
            signal: Sig::Term,
        }
    }

    #[test]
    fn another_start_time_is_a_reused_pid_and_is_not_signalled() {
        let mut child = sleeper();
        let pid = child.id();
        let req = term(pid, 100);
        assert_eq!(send(&Fake(vec![(pid, 200)]), req), Outcome::Reused);
        assert!(child.try_wait().unwrap().is_none(), "still running");
        assert_eq!(send(&Fake(vec![(pid, 100)]), req), Outcome::Sent);
        assert_eq!(child.wait().unwrap().signal(), Some(15));
    }

    #[test]
    fn an_exited_child_is_gone() {
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let got = send(&Fake(vec![(pid, 100)]), term(pid, 100));
        assert_eq!(got, Outcome::Gone);
        assert!(got.describe(term(pid, 100)).contains("already gone"));
        assert_eq!(send(&Fake(vec![]), term(0, 1)), Outcome::Gone, "pid 0");
    }
}
