//! Following files through appends, truncation, rotation, late creation and deletion, and
//! finding GPU processes' output files through a fake `/proc`.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::symlink;
use std::path::Path;

use super::*;

const OOM: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.00 GiB is free.\n";

fn append(path: &Path, text: &str) {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

#[test]
fn follows_appends_from_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    append(&log, &format!("old\n{OOM}old\n"));
    let mut w = LogWatch::new(std::slice::from_ref(&log));
    assert!(
        w.poll(1, &[]).is_empty(),
        "what was there before is not news"
    );
    append(&log, &format!("step 1\n{OOM}"));
    let got = w.poll(2, &[]);
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].line, got[0].at_ms, got[0].pid), (5, 2, None));
    assert_eq!(got[0].log, log.display().to_string());
    assert!(w.poll(3, &[]).is_empty());
}

#[test]
fn survives_truncation_and_rotation() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    append(&log, "start\n");
    let mut w = LogWatch::new(std::slice::from_ref(&log));
    w.poll(1, &[]);
    fs::write(&log, "").unwrap();
    append(&log, OOM);
    let got = w.poll(2, &[]);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].line, 1);

    // Rotation: the old file gets one last failure after the rename, the new file another.
    fs::rename(&log, dir.path().join("a.log.1")).unwrap();
    append(
        &dir.path().join("a.log.1"),
        &OOM.replace("2.00 GiB", "3.00 GiB"),
    );
    append(&log, &format!("x\n{}", OOM.replace("2.00 GiB", "4.00 GiB")));
    let got = w.poll(3, &[]);
    assert_eq!(got.len(), 2, "{got:#?}");
    assert!(got[0].message.contains("3.00 GiB"));
    assert!(got[1].message.contains("4.00 GiB"));
    assert_eq!(got[1].line, 2);
}

#[test]
fn file_that_appears_later_is_read_from_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("later.log");
    let mut w = LogWatch::new(std::slice::from_ref(&log));
    assert!(w.poll(1, &[]).is_empty());
    append(&log, OOM);
    assert_eq!(w.poll(2, &[]).len(), 1);
}

#[test]
fn deleted_file_is_read_to_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("gone.log");
    append(&log, "");
    let mut w = LogWatch::new(std::slice::from_ref(&log));
    let mut writer = OpenOptions::new().append(true).open(&log).unwrap();
    fs::remove_file(&log).unwrap();
    writer.write_all(OOM.as_bytes()).unwrap();
    assert_eq!(w.poll(1, &[]).len(), 1);
}

#[test]
fn dump_split_across_polls_is_one_failure() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("tf.log");
    append(&log, "");
    let mut w = LogWatch::new(std::slice::from_ref(&log));
    append(
        &log,
        "W bfc_allocator.cc:485] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00GiB (rounded to 1073741824)requested by op x\nI bfc_allocator.cc:1109] Total bytes in pool: 8589934592 memory_limit_: 8589934592 available bytes: 0\n",
    );
    assert!(w.poll(1, &[]).is_empty(), "the dump may go on");
    let got = w.poll(2, &[]);
    assert_eq!(got.len(), 1, "a quiet tick ends it");
    assert_eq!(got[0].numbers.pool.map(|s| s.bytes), Some(8_589_934_592));
    append(
        &log,
        "ResourceExhaustedError: OOM when allocating tensor with shape[268435456] and type float on /device:GPU:0 by allocator GPU_0_bfc\n",
    );
    assert!(
        w.poll(3, &[]).is_empty(),
        "the raised error is the same failure"
    );
}

#[test]
fn long_lines_and_the_per_poll_cap() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("big.log");
    append(&log, "");
    let mut w = LogWatch::new(std::slice::from_ref(&log));
    let junk = "y".repeat(MAX_FILE_BYTES + (1 << 20));
    append(&log, &format!("{junk}\n{OOM}"));
    assert!(w.poll(1, &[]).is_empty(), "a poll stops at its cap");
    let got = w.poll(2, &[]);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].line, 2);
}

/// A fake /proc with `pid`'s stdout and stderr pointing at `out` and `err`.
fn fake_proc(root: &Path, pid: u32, out: &Path, err: &Path) {
    let fd = root.join(pid.to_string()).join("fd");
    fs::create_dir_all(&fd).unwrap();
    symlink(out, fd.join("1")).unwrap();
    symlink(err, fd.join("2")).unwrap();
}

#[test]
fn follows_a_gpu_process_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let proc_root = dir.path().join("proc");
    let out = dir.path().join("job.out");
    append(&out, "before\n");
    fake_proc(&proc_root, 42, &out, Path::new("/dev/null"));
    let mut w = LogWatch::with_proc(&[], proc_root);
    assert!(w.status(42).is_none());
    assert!(w.poll(1, &[42]).is_empty());
    assert_eq!(
        w.status(42),
        Some(&LogStatus::Following(vec![out.display().to_string()]))
    );
    append(&out, OOM);
    let got = w.poll(2, &[42]);
    assert_eq!((got.len(), got[0].pid, got[0].line), (1, Some(42), 2));
    // It exits right after its last words: they are still read, and what its file says for
    // `LINGER_MS` more (a launcher's summary), then it is forgotten.
    append(&out, &OOM.replace("2.00 GiB", "8.00 GiB"));
    let got = w.poll(3, &[]);
    assert_eq!((got.len(), got[0].pid), (1, Some(42)));
    assert!(w.status(42).is_none());
    append(&out, &OOM.replace("2.00 GiB", "9.00 GiB"));
    let got = w.poll(3 + LINGER_MS - 1, &[]);
    assert_eq!((got.len(), got[0].pid), (1, Some(42)), "still read");
    assert!(w.poll(3 + LINGER_MS, &[]).is_empty());
    append(&out, OOM);
    assert!(w.poll(4 + LINGER_MS, &[]).is_empty(), "no longer followed");
}

#[test]
fn a_shared_log_keeps_its_writers_and_is_read_after_they_exit() {
    // torchrun's one log: both ranks write it; rank 0 exits first, then rank 1; the agent's
    // summary comes after both.
    let dir = tempfile::tempdir().unwrap();
    let proc_root = dir.path().join("proc");
    let out = dir.path().join("train.log");
    append(&out, "");
    fake_proc(&proc_root, 1446, &out, &out);
    fake_proc(&proc_root, 1447, &out, &out);
    let mut w = LogWatch::with_proc(&[], proc_root);
    w.poll(1_000, &[1446, 1447]);
    append(&out, &format!("[rank0]: {OOM}"));
    let got = w.poll(2_000, &[1447]);
    assert_eq!(
        (got.len(), got[0].pid, got[0].rank),
        (1, None, Some(0)),
        "not rank 1's"
    );
    let rank1 = "[rank1]:[E1121 06:06:43.101 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3067, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=40000) ran for 40006 milliseconds before timing out.\n";
    append(&out, rank1);
    let got = w.poll(3_000, &[]);
    assert_eq!((got.len(), got[0].pid, got[0].rank), (1, None, Some(1)));
    append(
        &out,
        "Root Cause (first observed failure):\n[0]:\n  rank      : 0 (local_rank: 0)\n  exitcode  : 1 (pid: 1446)\n======\n",
    );
    let got = w.poll(3_000 + LINGER_MS - 1, &[]);
    assert_eq!(
        (got.len(), got[0].pid, got[0].rank),
        (1, None, Some(0)),
        "{got:?}"
    );
    assert!(got[0].dist.is_some());
}

#[test]
fn a_failure_finished_after_its_process_exits_keeps_the_pid() {
    // Real JAX 0.11 output: the allocator's header, then the error; the process exits at once,
    // so the failure is only complete when its file is finished.
    let real = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/logs/rec-jax-limit.log"
    ))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let proc_root = dir.path().join("proc");
    let out = dir.path().join("jax.out");
    append(&out, "");
    fake_proc(&proc_root, 43, &out, &out);
    let mut w = LogWatch::with_proc(&[], proc_root);
    assert!(w.poll(1, &[43]).is_empty());
    append(&out, &real);
    // Its window closes at the next quiet tick, while its file is still read.
    let mut got = w.poll(2, &[]);
    got.extend(w.poll(3, &[]));
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].pid, Some(43));
}

#[test]
fn pipes_and_terminals_are_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let proc_root = dir.path().join("proc");
    fake_proc(
        &proc_root,
        7,
        Path::new("/dev/null"),
        &dir.path().join("missing"),
    );
    let mut w = LogWatch::with_proc(&[], proc_root);
    w.poll(1, &[7, 8]);
    assert_eq!(
        w.status(7),
        Some(&LogStatus::NotAFile(
            "stdout is /dev/null, stderr is closed".into()
        ))
    );
    assert_eq!(
        w.status(8),
        Some(&LogStatus::NotAFile(
            "stdout is closed, stderr is closed".into()
        ))
    );
}

#[test]
fn a_shared_file_is_read_once() {
    let dir = tempfile::tempdir().unwrap();
    let proc_root = dir.path().join("proc");
    let out = dir.path().join("all.log");
    append(&out, "");
    fake_proc(&proc_root, 1, &out, &out);
    fake_proc(&proc_root, 2, &out, &out);
    let mut w = LogWatch::with_proc(std::slice::from_ref(&out), proc_root);
    w.poll(1, &[1]);
    append(&out, OOM);
    let got = w.poll(2, &[1]);
    assert_eq!(
        (got.len(), got[0].pid),
        (1, Some(1)),
        "--log and fd are one file"
    );
    w.poll(3, &[1, 2]);
    append(&out, &OOM.replace("2.00 GiB", "5.00 GiB"));
    let got = w.poll(4, &[1, 2]);
    assert_eq!(
        (got.len(), got[0].pid),
        (1, None),
        "two writers: owner unknown"
    );
}

#[test]
fn a_real_pipe_is_named_and_the_status_travels_as_a_reading() {
    let mut child = std::process::Command::new("sleep")
        .arg("5")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut w = LogWatch::new(&[]);
    w.poll(1, &[child.id()]);
    let status = w.status(child.id()).cloned();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        status.map(|s| s.reading()),
        Some(Reading::na(
            "not a file (stdout is a pipe, stderr is /dev/null)"
        ))
    );
    assert_eq!(
        LogStatus::NotReadable("permission denied".into()).reading(),
        Reading::na("not readable (permission denied)")
    );
    assert_eq!(
        LogStatus::Following(vec!["/a.log".into()]).reading(),
        Reading::Value(vec!["/a.log".to_string()])
    );
}

mod backlog;
