//! The command: spawned in its own process group (signals meant for gpumon's terminal do not
//! reach it) with stdin from /dev/null and stdout+stderr to the log; waited for on a thread of
//! its own; stopped with SIGTERM to its group, then SIGKILL after [`KILL_AFTER`].

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use rustix::process::{Pid, Signal, kill_process_group};
use tokio::sync::{mpsc, oneshot, watch};

use crate::screen::run::KILL_AFTER;
use crate::screen::{Msg, RunEnd};

/// Starts `argv` with stdin from /dev/null, stdout+stderr going to `log`, and `env` added to
/// the environment it inherits.
pub fn spawn(argv: &[OsString], log: &File, env: &[(&str, OsString)]) -> io::Result<Child> {
    let Some((program, args)) = argv.split_first() else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "no command"));
    };
    Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log.try_clone()?)
        .process_group(0)
        .spawn()
}

/// The running command, seen from gpumon.
pub struct Handle {
    pub pid: u32,
    stop: mpsc::Sender<()>,
    ended: watch::Receiver<Option<RunEnd>>,
}

impl Handle {
    /// What the screen's `k` sends to stop the command.
    pub fn stopper(&self) -> mpsc::Sender<()> {
        self.stop.clone()
    }

    /// How it ended, once it has.
    pub fn ended(&self) -> Option<RunEnd> {
        *self.ended.borrow()
    }

    /// Stops it (unless it has ended) and waits for its end.
    pub async fn stop(&mut self) -> RunEnd {
        let _ = self.stop.try_send(());
        match self.ended.wait_for(Option::is_some).await {
            Ok(end) => end.unwrap_or(RunEnd::Unknown),
            Err(_) => RunEnd::Unknown,
        }
    }
}

/// Waits for `child` on a thread; its end goes to `tx` as `Msg::RunEnded`. A stop request sends
/// SIGTERM to its process group, then SIGKILL if it has not ended after [`KILL_AFTER`].
pub fn watch(mut child: Child, tx: mpsc::Sender<Msg>) -> Handle {
    let pid = child.id();
    let (done_tx, mut done) = oneshot::channel();
    std::thread::spawn(move || {
        let _ = done_tx.send(RunEnd::of(child.wait()));
    });
    let (stop, mut stop_rx) = mpsc::channel(1);
    let (ended_tx, ended) = watch::channel(None);
    tokio::spawn(async move {
        let end = tokio::select! {
            end = &mut done => end.unwrap_or(RunEnd::Unknown),
            Some(()) = stop_rx.recv() => {
                signal(pid, Signal::TERM);
                match tokio::time::timeout(KILL_AFTER, &mut done).await {
                    Ok(end) => end.unwrap_or(RunEnd::Unknown),
                    Err(_) => {
                        signal(pid, Signal::KILL);
                        done.await.unwrap_or(RunEnd::Unknown)
                    }
                }
            }
        };
        let _ = ended_tx.send(Some(end));
        let _ = tx.send(Msg::RunEnded(end)).await;
    });
    Handle { pid, stop, ended }
}

/// Signals the command's process group (the command and the children it did not move out).
fn signal(pgid: u32, sig: Signal) {
    if let Some(pid) = i32::try_from(pgid).ok().and_then(Pid::from_raw) {
        let _ = kill_process_group(pid, sig);
    }
}

#[cfg(test)]
mod tests;
