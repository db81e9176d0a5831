//! A job's failure live, through the pipeline: a rank's line joined to its process, one alert
//! amended as the other ranks' failures come, and every bad input left unjoined with its reason.

use crate::model::{Alert, Config, Event, Level, Machine};
use crate::oom::failure::Failure;
use crate::pipeline;
use crate::sample::{Framework, GpuSample, ProcessSample, Reading, Sample};
use crate::source::scripted::build::{GIB, gpu, machine, process, ranked};

mod consequences;
mod counted;
mod stories;

pub(crate) const T0: u64 = 1_763_812_900_000;
pub(crate) const LOG: &str = "/srv/log/train.log";
pub(crate) const OOM: &str = "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 64.12 GiB is free. Including non-PyTorch memory, this process has 14.00 GiB memory in use. 14.00 GiB allowed; Of the allocated memory 13.95 GiB is allocated by PyTorch, and 40.00 MiB is reserved by PyTorch but unallocated.";
pub(crate) const WATCHDOG: &str = "[rank1]:[E1121 06:06:43.101 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3067, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=40000) ran for 40006 milliseconds before timing out.";

/// A scripted run, one sample a second.
pub(crate) struct Run {
    pub(crate) m: Machine,
    second: u64,
    pub(crate) gpus: Vec<GpuSample>,
}

impl Run {
    pub(crate) fn new() -> Run {
        let mut m = Machine::new(Config::new(1000, 600_000));
        pipeline::apply(&mut m, Event::Started(machine()));
        let gpus = vec![gpu(0, 80 * GIB, 20 * GIB, 0), gpu(1, 80 * GIB, 20 * GIB, 0)];
        Run { m, second: 0, gpus }
    }

    pub(crate) fn now(&self) -> u64 {
        T0 + self.second * 1000
    }

    /// One second: these processes, the failures these lines of `log` say.
    pub(crate) fn tick(&mut self, processes: Vec<ProcessSample>, log: &str, lines: &[&str]) {
        let at = self.now();
        let text = lines.join("\n");
        // The log's one writer, as the log watcher names it.
        let writers: Vec<u32> = processes
            .iter()
            .filter(|p| p.log.value().is_some_and(|l| l.iter().any(|x| x == log)))
            .map(|p| p.pid)
            .collect();
        let owner = match writers.as_slice() {
            [one] => Some(*one),
            _ => None,
        };
        let failures: Vec<Failure> = crate::oom::parse_all(text.as_bytes())
            .into_iter()
            .map(|p| p.into_failure(at, log, owner))
            .collect();
        let sample = Sample {
            at_ms: at,
            gpus: self.gpus.clone(),
            processes,
            failures,
            ..Default::default()
        };
        pipeline::apply(&mut self.m, Event::Sample(sample));
        self.second += 1;
    }

    pub(crate) fn failures(&self) -> Vec<&Alert> {
        self.m
            .alerts
            .iter()
            .filter(|a| a.level == Level::Failure)
            .collect()
    }
}

/// `pid` as rank `rank` of the torchrun job writing `LOG`, on GPU `rank`.
pub(crate) fn rank(run: &Run, pid: u32, rank: u32, job: &str) -> ProcessSample {
    let mut p = ranked(
        process(
            pid,
            &run.gpus[rank as usize % 2],
            14 * GIB,
            Framework::Pytorch,
            "python train.py",
        ),
        job,
        rank,
        2,
    );
    p.log = Reading::Value(vec![LOG.into()]);
    p
}

#[test]
fn a_ranks_oom_in_a_shared_log_is_one_alert_amended_by_the_watchdog_that_followed() {
    let mut run = Run::new();
    let job = "torchrun:abc";
    let both = |run: &Run| vec![rank(run, 1446, 0, job), rank(run, 1447, 1, job)];
    let p = both(&run);
    run.tick(p, LOG, &[]);
    let p = both(&run);
    run.tick(p, LOG, &[OOM]);
    let a = run.failures();
    assert_eq!(a.len(), 1, "{a:#?}");
    assert_eq!((a[0].pid, a[0].job.as_deref()), (Some(1446), Some(job)));
    assert_eq!(a[0].class, "pool-limit");
    assert!(
        a[0].title
            .starts_with("rank 0: pid 1446 PyTorch OOM: pool-limit"),
        "{}",
        a[0].title
    );
    let opened = a[0].at_ms;
    // Rank 0 is gone; rank 1 waits in its all-reduce for 100 s, then its watchdog aborts it.
    for _ in 0..100 {
        let p = vec![rank(&run, 1447, 1, job)];
        run.tick(p, LOG, &[]);
    }
    let p = vec![rank(&run, 1447, 1, job)];
    run.tick(p, LOG, &[WATCHDOG]);
    run.tick(Vec::new(), LOG, &[]);
    let a = run.failures();
    assert_eq!(a.len(), 1, "one alert for the job: {a:#?}");
    let a = a[0];
    assert_eq!(
        (a.pid, a.at_ms, a.class.as_str()),
        (Some(1446), opened, "pool-limit")
    );
    assert!(
        a.title
            .starts_with("rank 0 failed first, 1 rank followed: pid 1446 PyTorch OOM: pool-limit"),
        "{}",
        a.title
    );
    let root_at = crate::model::units::clock(opened);
    let wd_at = crate::model::units::clock(T0 + 102_000);
    let want = format!(
        "rank 1 aborted by NCCL's watchdog at {wd_at} waiting on ALLREDUCE #3067 (timeout 40s): a consequence of rank 0's OOM at {root_at}"
    );
    assert!(a.evidence.contains(&want), "{want}\n{:#?}", a.evidence);
    assert!(
        a.remedy
            .as_deref()
            .unwrap()
            .contains("they need no fix of their own")
    );
    // Neither rank's exit is told again as a risk of its own.
    assert!(
        run.m
            .alerts
            .iter()
            .all(|x| !matches!(x.class.as_str(), "exit-no-log" | "exit-at-limit")),
        "{:#?}",
        run.m.alerts
    );
}

#[test]
fn a_watchdog_timeout_with_no_failed_rank_is_its_own_finding() {
    let mut run = Run::new();
    let job = "torchrun:abc";
    let p = vec![rank(&run, 1446, 0, job), rank(&run, 1447, 1, job)];
    run.tick(p, LOG, &[WATCHDOG]);
    let a = run.failures();
    assert_eq!(a.len(), 1, "{a:#?}");
    assert_eq!(
        (a[0].class.as_str(), a[0].pid),
        ("collective-timeout", Some(1447))
    );
    assert!(
        a[0].title
            .contains("ALLREDUCE #3067 ran 40s and passed its 40s timeout"),
        "{}",
        a[0].title
    );
    assert!(a[0].title.ends_with("a rank stuck or slow, not dead"));
    assert!(
        a[0].remedy
            .as_deref()
            .unwrap()
            .contains("TORCH_NCCL_DUMP_ON_TIMEOUT=1")
    );
}

#[test]
fn a_rank_that_ended_silently_before_a_timeout_likely_failed_first() {
    let mut run = Run::new();
    let job = "torchrun:abc";
    let p = vec![rank(&run, 1446, 0, job), rank(&run, 1447, 1, job)];
    run.tick(p, LOG, &[]);
    for _ in 0..40 {
        let p = vec![rank(&run, 1447, 1, job)];
        run.tick(p, LOG, &[]);
    }
    let p = vec![rank(&run, 1447, 1, job)];
    run.tick(p, LOG, &[WATCHDOG]);
    let a = run.failures();
    assert_eq!(a.len(), 1, "{a:#?}");
    assert_eq!((a[0].class.as_str(), a[0].pid), ("rank-failed", Some(1446)));
    assert_eq!(a[0].confidence.as_deref(), Some("likely"));
    assert!(
        a[0].title
            .starts_with("rank 0 failed first (its process ended first"),
        "{}",
        a[0].title
    );
}

/// The one failure alert after `lines` are read from `log` written by `procs`.
pub(crate) fn judged(
    procs: impl Fn(&Run) -> Vec<ProcessSample>,
    log: &str,
    lines: &[&str],
) -> Alert {
    let mut run = Run::new();
    let p = procs(&run);
    run.tick(p, log, &[]);
    let p = procs(&run);
    run.tick(p, log, lines);
    let a = run.failures();
    assert_eq!(a.len(), 1, "{a:#?}");
    a[0].clone()
}

pub(crate) fn unjoined(a: &Alert, why: &str) {
    assert_eq!(a.pid, None, "no wrong join: {a:#?}");
    assert!(
        a.evidence.iter().any(|e| e.contains(why)),
        "{why}\n{:#?}",
        a.evidence
    );
}

#[test]
fn torchruns_summary_names_the_root_when_no_line_of_its_own_says_more() {
    let job = "torchrun:abc";
    let summary = [
        "Failures:",
        "[1]:",
        "  time      : 2026-11-21_06:06:45",
        "  host      : gpu-07",
        "  rank      : 1 (local_rank: 1)",
        "  exitcode  : -15 (pid: 1447)  (SIGTERM)",
        "  error_file: <N/A>",
        "  traceback : Signal 15 (SIGTERM) received by PID 1447",
        "------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-11-21_06:06:44",
        "  host      : gpu-07",
        "  rank      : 0 (local_rank: 0)",
        "  exitcode  : 1 (pid: 1446)",
        "  error_file: <N/A>",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        "======",
    ];
    let a = judged(
        |r| vec![rank(r, 1446, 0, job), rank(r, 1447, 1, job)],
        LOG,
        &summary,
    );
    assert_eq!((a.class.as_str(), a.pid), ("rank-failed", Some(1446)));
    assert!(
        a.title
            .starts_with("rank 0 failed first (its launcher names it), 1 rank followed"),
        "{}",
        a.title
    );
    assert!(
        a.evidence
            .iter()
            .any(|e| e.starts_with("rank 1 stopped by torchrun with SIGTERM")),
        "{:#?}",
        a.evidence
    );
    // A summary naming a pid that is another rank: not joined.
    let lie = summary.map(|l| l.replace("(pid: 1446)", "(pid: 1447)"));
    let lie: Vec<&str> = lie.iter().map(String::as_str).collect();
    let a = judged(
        |r| vec![rank(r, 1446, 0, job), rank(r, 1447, 1, job)],
        LOG,
        &lie,
    );
    assert!(
        a.evidence
            .iter()
            .any(|e| e.contains("the line says pid 1447 is rank 0, but pid 1447 is rank 1")),
        "{:#?}",
        a.evidence
    );
}

#[test]
fn ranks_started_one_by_one_each_with_its_own_log() {
    let mut run = Run::new();
    let job = "slurm:4242.0";
    let own = |r: &Run, pid: u32, n: u32| {
        let mut p = rank(r, pid, n, job);
        p.log = Reading::Value(vec![format!("/srv/log/rank{n}.log")]);
        p
    };
    let p = vec![own(&run, 1446, 0), own(&run, 1447, 1)];
    run.tick(
        p,
        "/srv/log/rank0.log",
        &[OOM.trim_start_matches("[rank0]: ")],
    );
    for _ in 0..99 {
        let p = vec![own(&run, 1447, 1)];
        run.tick(p, "/srv/log/rank1.log", &[]);
    }
    let p = vec![own(&run, 1447, 1)];
    run.tick(p, "/srv/log/rank1.log", &[WATCHDOG]);
    let a = run.failures();
    assert_eq!(a.len(), 1, "{a:#?}");
    assert_eq!((a[0].pid, a[0].job.as_deref()), (Some(1446), Some(job)));
    assert!(
        a[0].title
            .starts_with("rank 0 failed first, 1 rank followed"),
        "{}",
        a[0].title
    );
}

#[test]
fn jax_names_the_process_that_died_from_process_0s_log() {
    let mut run = Run::new();
    let job = "jax:10.0.0.1:1234";
    let proc_ = |r: &Run, pid: u32, n: u32| {
        let mut p = rank(r, pid, n, job);
        p.framework = Reading::Value(Framework::Jax);
        p.log = Reading::Value(vec![format!("/srv/log/process{n}.log")]);
        p
    };
    let p = vec![proc_(&run, 500, 0), proc_(&run, 501, 1)];
    run.tick(p, "/srv/log/process0.log", &[]);
    // Process 1 is gone; ten seconds later process 0 hears of it, and ends.
    for _ in 0..10 {
        let p = vec![proc_(&run, 500, 0)];
        run.tick(p, "/srv/log/process0.log", &[]);
    }
    let p = vec![proc_(&run, 500, 0)];
    run.tick(
        p,
        "/srv/log/process0.log",
        &[
            "E1124 06:12:01.123456  4242 coordination_service.cc:1518] Use error polling to propagate the following error to all tasks: UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):",
            "1",
            "The tasks have crashed. Check the task logs for an earlier error, or scheduler events (e.g. preemption, eviction) to debug further.",
            "F1124 06:12:01.987654  4242 client.h:86] Terminating process because the JAX distributed service detected fatal errors. This most likely indicates that another task died; see the other task logs for more details.",
        ],
    );
    let a = run.failures();
    assert_eq!(a.len(), 1, "{a:#?}");
    assert_eq!((a[0].class.as_str(), a[0].pid), ("rank-failed", Some(501)));
    assert!(
        a[0].title
            .starts_with("rank 1 failed first (its launcher names it), 1 rank followed"),
        "{}",
        a[0].title
    );
    assert!(
        a[0].evidence
            .iter()
            .any(|e| e.starts_with("rank 0 terminated by JAX's distributed service")),
        "{:#?}",
        a[0].evidence
    );
}

#[test]
fn a_rank_named_first_by_torchrun_beside_another_ranks_own_oom() {
    // Rank 1's OOM has a line of its own; torchrun saw rank 0 exit first (its error is not one
    // gpumon reads). The OOM is the root cause; torchrun's word is kept, not called a consequence.
    let job = "torchrun:abc";
    let lines = [
        &*OOM.replace("[rank0]", "[rank1]"),
        "Root Cause (first observed failure):",
        "[0]:",
        "  rank      : 0 (local_rank: 0)",
        "  exitcode  : 1 (pid: 1446)",
        "======",
    ];
    let a = judged(
        |r| vec![rank(r, 1446, 0, job), rank(r, 1447, 1, job)],
        LOG,
        &lines,
    );
    assert_eq!(a.pid, Some(1447));
    let said = a
        .evidence
        .iter()
        .find(|e| e.starts_with("rank 0 is torchrun's root cause"))
        .unwrap_or_else(|| panic!("{:#?}", a.evidence));
    assert!(
        said.contains("; the first failure with a line of its own is rank 1's OOM"),
        "{said}"
    );
}
