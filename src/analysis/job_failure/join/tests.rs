//! Joining a rank's line to its process: every bad input leaves the line unjoined, with the
//! reason in the alert's evidence, and no wrong join.

use crate::analysis::job_failure::tests::{LOG, OOM, Run, judged, rank, unjoined};
use crate::sample::{Framework, Reading};
use crate::source::scripted::build::{GIB, process};

#[test]
fn bad_inputs_leave_the_line_unjoined_with_the_reason() {
    let job = "torchrun:abc";
    // A prefix no process of the job has.
    let a = judged(
        |r| vec![rank(r, 1446, 0, job), rank(r, 1447, 1, job)],
        LOG,
        &[&OOM.replace("[rank0]", "[rank5]")],
    );
    unjoined(
        &a,
        "rank 5 was not joined to a process: no process writing /srv/log/train.log is rank 5 of job torchrun:abc (its ranks there: 0, 1)",
    );
    assert_eq!(a.job.as_deref(), Some(job));
    // Two processes claiming the rank.
    let a = judged(
        |r| vec![rank(r, 1446, 0, job), rank(r, 1447, 0, job)],
        LOG,
        &[OOM],
    );
    unjoined(&a, "pid 1446, pid 1447 all say rank 0");
    // A `[rank0]:` line in the log of processes that are no distributed job.
    let plain = |r: &Run, pid: u32| {
        let mut p = process(pid, &r.gpus[0], GIB, Framework::Pytorch, "python a.py");
        p.log = Reading::Value(vec![LOG.into()]);
        p
    };
    let a = judged(|r| vec![plain(r, 10), plain(r, 11)], LOG, &[OOM]);
    unjoined(
        &a,
        "the processes writing /srv/log/train.log (pid 10, pid 11) are not ranks of a distributed job",
    );
    assert_eq!(a.job, None);
    assert!(a.title.starts_with("PyTorch OOM"), "{}", a.title);
    // Its writers ranks of two jobs.
    let a = judged(
        |r| {
            vec![
                rank(r, 1446, 0, "torchrun:a"),
                rank(r, 1447, 1, "torchrun:b"),
            ]
        },
        LOG,
        &[OOM],
    );
    unjoined(&a, "belong to several jobs (torchrun:a, torchrun:b)");
    // A number too large to be a rank.
    let a = judged(
        |r| vec![rank(r, 1446, 0, job), rank(r, 1447, 1, job)],
        LOG,
        &[&OOM.replace("[rank0]", "[rank99999999999]")],
    );
    unjoined(
        &a,
        "its prefix [rank99999999999]: names no rank gpumon believes",
    );
    // A log no watched process writes (`--log`).
    let a = judged(
        |r| vec![rank(r, 1446, 0, job)],
        "/srv/log/other.log",
        &[OOM],
    );
    unjoined(&a, "no process gpumon watches writes /srv/log/other.log");
}

#[test]
fn a_lines_rank_against_its_one_writer() {
    let job = "torchrun:abc";
    let own = |r: &Run| {
        let mut p = rank(r, 1447, 1, job);
        p.log = Reading::Value(vec!["/srv/log/1447.out".into()]);
        vec![p]
    };
    // Rank 1's own file says rank 0: not rank 1's.
    let a = judged(own, "/srv/log/1447.out", &[OOM]);
    unjoined(&a, "/srv/log/1447.out's one writer, pid 1447, is rank 1");
    // Its own rank, or no prefix: its own.
    let a = judged(
        own,
        "/srv/log/1447.out",
        &[&OOM.replace("[rank0]", "[rank1]")],
    );
    assert_eq!(a.pid, Some(1447));
    let a = judged(
        own,
        "/srv/log/1447.out",
        &[OOM.trim_start_matches("[rank0]: ")],
    );
    assert_eq!((a.pid, a.job.as_deref()), (Some(1447), Some(job)));
    assert!(
        a.title.starts_with("rank 1: pid 1447 PyTorch OOM"),
        "{}",
        a.title
    );
}

#[test]
fn a_local_prefix_joins_the_rank_of_that_local_rank() {
    // torchrun --tee: `[default1]:` is local rank 1.
    let job = "torchrun:abc";
    let a = judged(
        |r| vec![rank(r, 1446, 0, job), rank(r, 1447, 1, job)],
        LOG,
        &[&OOM.replace("[rank0]", "[default1]")],
    );
    assert_eq!((a.pid, a.job.as_deref()), (Some(1447), Some(job)));
    assert!(a.title.starts_with("rank 1: pid 1447"), "{}", a.title);
}
