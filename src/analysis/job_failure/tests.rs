//! A job's failure live, through the pipeline: a rank's line joined to its process, one alert
//! amended as the other ranks' failures come, and every bad input left unjoined with its reason.

use crate::model::{Alert, Config, Event, Level, Machine};
use crate::oom::failure::Failure;
use crate::pipeline;
use crate::sample::{Framework, GpuSample, ProcessSample, Reading, Sample};
use crate::source::scripted::build::{GIB, gpu, machine, process, ranked};

const T0: u64 = 1_763_812_900_000;
const LOG: &str = "/srv/log/train.log";
const OOM: &str = "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 64.12 GiB is free. Including non-PyTorch memory, this process has 14.00 GiB memory in use. 14.00 GiB allowed; Of the allocated memory 13.95 GiB is allocated by PyTorch, and 40.00 MiB is reserved by PyTorch but unallocated.";
const WATCHDOG: &str = "[rank1]:[E1121 06:06:43.101 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3067, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=40000) ran for 40006 milliseconds before timing out.";

/// A scripted run, one sample a second.
struct Run {
    m: Machine,
    second: u64,
    gpus: Vec<GpuSample>,
}

impl Run {
    fn new() -> Run {
        let mut m = Machine::new(Config::new(1000, 600_000));
        pipeline::apply(&mut m, Event::Started(machine()));
        let gpus = vec![gpu(0, 80 * GIB, 20 * GIB, 0), gpu(1, 80 * GIB, 20 * GIB, 0)];
        Run { m, second: 0, gpus }
    }

    fn now(&self) -> u64 {
        T0 + self.second * 1000
    }

    /// One second: these processes, the failures these lines of `log` say.
    fn tick(&mut self, processes: Vec<ProcessSample>, log: &str, lines: &[&str]) {
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
            notices: Vec::new(),
            events: Vec::new(),
            probes: Vec::new(),
        };
        pipeline::apply(&mut self.m, Event::Sample(sample));
        self.second += 1;
    }

    fn failures(&self) -> Vec<&Alert> {
        self.m
            .alerts
            .iter()
            .filter(|a| a.level == Level::Failure)
            .collect()
    }
}

/// `pid` as rank `rank` of the torchrun job writing `LOG`, on GPU `rank`.
fn rank(run: &Run, pid: u32, rank: u32, job: &str) -> ProcessSample {
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
fn a_rank_that_simply_exits_after_the_root_is_a_consequence() {
    let mut run = Run::new();
    let job = "torchrun:abc";
    let p = vec![rank(&run, 1446, 0, job), rank(&run, 1447, 1, job)];
    run.tick(p, LOG, &[OOM]);
    let p = vec![rank(&run, 1447, 1, job)];
    run.tick(p, LOG, &[]);
    run.tick(Vec::new(), LOG, &[]);
    let a = run.failures();
    assert_eq!(a.len(), 1);
    let ended = crate::model::units::clock(T0 + 2000);
    assert!(
        a[0].evidence.iter().any(|e| e.starts_with(&format!(
            "rank 1 exited at {ended} with no failure line of its own: a consequence of rank 0's OOM"
        ))),
        "{:#?}",
        a[0].evidence
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
fn judged(procs: impl Fn(&Run) -> Vec<ProcessSample>, log: &str, lines: &[&str]) -> Alert {
    let mut run = Run::new();
    let p = procs(&run);
    run.tick(p, log, &[]);
    let p = procs(&run);
    run.tick(p, log, lines);
    let a = run.failures();
    assert_eq!(a.len(), 1, "{a:#?}");
    a[0].clone()
}

fn unjoined(a: &Alert, why: &str) {
    assert_eq!(a.pid, None, "no wrong join: {a:#?}");
    assert!(
        a.evidence.iter().any(|e| e.contains(why)),
        "{why}\n{:#?}",
        a.evidence
    );
}

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
