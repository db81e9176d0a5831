//! The stories a job's end tells apart, live (issue 39): every rank failing of its own alike (one
//! common cause), a rank that never reached the collective the others timed out on, a launcher
//! stopped from outside, a failure the job survived, and the counts said alike everywhere.

use super::{LOG, OOM, Run, T0, WATCHDOG, rank};
use crate::model::Level;

const OOM1: &str = "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 1 has a total capacity of 79.19 GiB of which 64.12 GiB is free. Including non-PyTorch memory, this process has 14.00 GiB memory in use. 14.00 GiB allowed; Of the allocated memory 13.95 GiB is allocated by PyTorch, and 40.00 MiB is reserved by PyTorch but unallocated.";

#[test]
fn every_rank_failing_of_its_own_alike_is_one_common_cause() {
    let mut run = Run::new();
    let job = "torchrun:abc";
    let p = vec![rank(&run, 1446, 0, job), rank(&run, 1447, 1, job)];
    run.tick(p, LOG, &[OOM, OOM1]);
    run.tick(Vec::new(), LOG, &[]);
    let a = run.failures();
    assert_eq!(a.len(), 1, "{a:#?}");
    assert!(
        a[0].title.starts_with("ranks 0 and 1 each ran out of memory of their own within 1s: one cause in code every rank runs"),
        "{}",
        a[0].title
    );
    let remedy = a[0].remedy.as_deref().unwrap_or("");
    assert!(
        remedy.contains("the fix is in that code, and it serves all 2 ranks"),
        "{remedy}"
    );
    assert!(!remedy.contains("no fix of their own"), "{remedy}");
    assert!(!a[0].title.contains("followed"), "{}", a[0].title);
}

#[test]
fn a_rank_behind_the_collective_the_others_timed_out_on_is_named_stuck() {
    let mut run = Run::new();
    let job = "torchrun:abc";
    let p = vec![rank(&run, 1446, 0, job), rank(&run, 1447, 1, job)];
    run.tick(p.clone(), LOG, &[]);
    let dump = "[rank0]:[E1121 06:06:44.120 ProcessGroupNCCL.cpp:1685] [PG ID 0 PG GUID 0(default_pg) Rank 0] Received a dump signal due to a collective timeout from rank 1 and we will try our best to dump the debug info. Last enqueued NCCL work: 3066, last completed NCCL work: 3066.";
    run.tick(p, LOG, &[WATCHDOG, dump]);
    run.tick(Vec::new(), LOG, &[]);
    let a = run.failures();
    assert_eq!(a.len(), 1, "{a:#?}");
    assert_eq!(a[0].class, "rank-stuck");
    assert_eq!(a[0].pid, Some(1446));
    assert!(
        a[0].title
            .starts_with("rank 0 never reached ALLREDUCE #3067: rank 1 waited for it"),
        "{}",
        a[0].title
    );
    assert!(
        a[0].evidence.iter().any(
            |e| e.contains("rank 0's own count") && e.contains("last enqueued NCCL work #3066")
        ),
        "{:#?}",
        a[0].evidence
    );
    assert!(
        a[0].evidence
            .iter()
            .any(|e| e.contains("rank 1 aborted by NCCL's watchdog")
                && e.contains("a consequence of rank 0 never reaching the collective")),
        "{:#?}",
        a[0].evidence
    );
}

#[test]
fn a_launcher_signalled_from_outside_blames_no_rank() {
    let mut run = Run::new();
    let job = "torchrun:abc";
    let p = vec![rank(&run, 1446, 0, job), rank(&run, 1447, 1, job)];
    run.tick(p, LOG, &[
        "W1127 18:40:02.511000 2211 torch/distributed/elastic/agent/server/api.py:725] Received 15 death signal, shutting down workers",
        "W1127 18:40:02.512000 2211 torch/distributed/elastic/multiprocessing/api.py:900] Sending process 1446 closing signal SIGTERM",
        "W1127 18:40:02.512000 2211 torch/distributed/elastic/multiprocessing/api.py:900] Sending process 1447 closing signal SIGTERM",
    ]);
    run.tick(Vec::new(), LOG, &[]);
    let all: Vec<_> = run.m.alerts.iter().filter(|a| a.job.is_some()).collect();
    assert_eq!(all.len(), 1, "{all:#?}");
    let a = all[0];
    assert_eq!(a.class, "stopped-from-outside");
    assert_eq!(a.level, Level::Info);
    assert_eq!(
        a.title,
        format!(
            "the job was stopped from outside: torchrun itself received SIGTERM at {}, and 2 ranks ended after it; no rank failed",
            crate::model::units::clock(T0)
        )
    );
    assert!(run.failures().is_empty(), "{:#?}", run.failures());
}

#[test]
fn slurms_time_limit_is_a_stop_from_outside() {
    let mut run = Run::new();
    let job = "slurm:4242";
    let p = vec![rank(&run, 1446, 0, job), rank(&run, 1447, 1, job)];
    run.tick(p, LOG, &["slurmstepd: error: *** JOB 4242 ON node12 CANCELLED AT 2026-11-27T18:40:02 DUE TO TIME LIMIT ***"]);
    run.tick(Vec::new(), LOG, &[]);
    let a = run
        .m
        .alerts
        .iter()
        .find(|a| a.job.is_some())
        .expect("a job alert");
    assert_eq!(a.class, "stopped-from-outside");
    assert!(
        a.title.contains("Slurm cancelled 4242 due to time limit"),
        "{}",
        a.title
    );
    assert!(a.remedy.as_deref().unwrap_or("").contains("sbatch --time"));
}

#[test]
fn a_rank_still_running_after_its_failure_survived_it() {
    let mut run = Run::new();
    let job = "torchrun:abc";
    let p = || {
        vec![
            rank(&Run::new(), 1446, 0, job),
            rank(&Run::new(), 1447, 1, job),
        ]
    };
    run.tick(p(), LOG, &[OOM]);
    for _ in 0..31 {
        run.tick(p(), LOG, &[]);
    }
    let a = run
        .m
        .alerts
        .iter()
        .find(|a| a.job.is_some())
        .expect("a job alert");
    assert_eq!(a.class, "survived", "{a:#?}");
    assert_eq!(a.level, Level::Suspected);
    assert!(
        a.title.starts_with(&format!(
            "rank 0 ran out of memory at {} and ran on",
            crate::model::units::clock(T0)
        )),
        "{}",
        a.title
    );
    assert!(run.failures().is_empty());
}
