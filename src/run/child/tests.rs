//! The command under `gpumon run`: its output in the log, stdin closed, its status passed on,
//! and stopping it with SIGTERM, then SIGKILL when it ignores SIGTERM.

use std::ffi::OsString;
use std::time::Duration;

use super::*;
use crate::run::log_file;
use std::ffi::OsStr;

fn argv(script: &str) -> Vec<OsString> {
    ["sh", "-c", script].iter().map(OsString::from).collect()
}

/// Starts `script` with its output in a new log in `dir`.
fn start(dir: &std::path::Path, script: &str) -> (Handle, mpsc::Receiver<Msg>, log_file::RunLog) {
    let log = log_file::create(dir, OsStr::new("sh"), 0).unwrap();
    let child = spawn(&argv(script), &log.file, &[]).unwrap();
    let (tx, rx) = mpsc::channel(4);
    (watch(child, tx), rx, log)
}

#[tokio::test]
async fn output_goes_to_the_log_stdin_is_closed_and_the_status_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let (handle, mut rx, log) = start(
        dir.path(),
        "echo 'CUDA out of memory. Tried to allocate 2.00 GiB.'; echo oops >&2; read x; echo \"stdin:$x.\"; exit 3",
    );
    let msg = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .unwrap();
    assert!(
        matches!(msg, Some(Msg::RunEnded(RunEnd::Exited(3)))),
        "{msg:?}"
    );
    assert_eq!(handle.ended(), Some(RunEnd::Exited(3)));
    assert_eq!(RunEnd::Exited(3).code(), 3);
    let text = std::fs::read_to_string(&log.absolute).unwrap();
    assert_eq!(
        text,
        "CUDA out of memory. Tried to allocate 2.00 GiB.\noops\nstdin:.\n"
    );
}

#[tokio::test]
async fn stop_sends_sigterm_to_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let (mut handle, mut rx, _log) = start(dir.path(), "sleep 30 & wait");
    let end = tokio::time::timeout(Duration::from_secs(10), handle.stop())
        .await
        .unwrap();
    assert_eq!(end, RunEnd::Signaled(15));
    assert_eq!(end.code(), 143);
    assert_eq!(end.describe(), "killed by SIGTERM");
    assert!(matches!(
        rx.recv().await,
        Some(Msg::RunEnded(RunEnd::Signaled(15)))
    ));
}

#[tokio::test(start_paused = true)]
async fn one_that_ignores_sigterm_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let (mut handle, _rx, log) = start(dir.path(), "trap '' TERM; echo ready; sleep 30");
    for _ in 0..1000 {
        if !std::fs::read_to_string(&log.absolute).unwrap().is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(handle.stop().await, RunEnd::Signaled(9));
}

#[test]
fn statuses_in_words_and_numbers() {
    assert_eq!(RunEnd::Exited(0).describe(), "exited with status 0");
    assert_eq!(RunEnd::Signaled(9).code(), 137);
    assert_eq!(RunEnd::Signaled(64).describe(), "killed by signal 64");
    assert_eq!(RunEnd::Unknown.code(), 1);
    assert!(spawn(&[], &tempfile::tempfile().unwrap(), &[]).is_err());
    let missing = [OsString::from("/nonexistent/cmd")];
    assert!(spawn(&missing, &tempfile::tempfile().unwrap(), &[]).is_err());
}
