//! The reader of one log's distributed events, line by line: repeats, blocks, and lines of
//! several ranks interleaved.

use super::*;

pub(super) fn read(text: &str) -> Vec<Found> {
    let mut r = DistReader::default();
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let p = crate::oom::prefix::split(l);
        let (body, rank) = p.as_ref().map_or((l, None), |p| (p.body, p.rank));
        let _ = r.feed(i as u64 + 1, body, rank, &mut out);
    }
    r.flush(&mut out);
    out
}

#[test]
fn a_watchdog_timeout_said_three_times_is_one_event_per_rank() {
    // torch 2.8, two ranks (the run, shortened): the watchdog's line, the abort's
    // `what():` line without a prefix, again for the other rank.
    let log = "\
[rank1]:[E1121 06:06:43.101 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3067, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=40000) ran for 40006 milliseconds before timing out.
[rank1]:[E1121 06:06:43.102 ProcessGroupNCCL.cpp:2197] [PG ID 0 PG GUID 0(default_pg) Rank 1] Process group watchdog thread terminated with exception: [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3067, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=40000) ran for 40006 milliseconds before timing out.
terminate called after throwing an instance of 'c10::DistBackendError'
  what():  [PG ID 0 PG GUID 0(default_pg) Rank 1] Process group watchdog thread terminated with exception: [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3067, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=40000) ran for 40006 milliseconds before timing out.
[rank0]:[E1121 06:06:43.200 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3067, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=40000) ran for 40100 milliseconds before timing out.
";
    let found = read(log);
    let ranks: Vec<Option<u32>> = found.iter().map(|f| f.rank).collect();
    assert_eq!(ranks, vec![Some(1), Some(0)], "{found:#?}");
    assert!(
        matches!(&found[0].dist, Dist::WatchdogTimeout { time: Some(t), .. } if t == "06:06:43")
    );
}

#[test]
fn a_summary_between_other_lines_and_a_jax_list_at_the_end() {
    let log = format!(
        "W0801 13:23:17.366000 32974 torch/distributed/elastic/multiprocessing/api.py:900] Sending process 33051 closing signal SIGTERM\n\
         {}\n\
         E1124 06:12:01.1 4242 coordination_service.cc:1518] UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):\n\
         1\n\
         3",
        super::torchrun::tests::EIGHT_RANKS
    );
    let found = read(&log);
    let kinds: Vec<&str> = found
        .iter()
        .map(|f| match &f.dist {
            Dist::Stopped { .. } => "stopped",
            Dist::Torchrun { root: true, .. } => "root",
            Dist::Torchrun { .. } => "failure",
            Dist::JaxTasks { .. } => "jax",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        ["stopped", "failure", "failure", "root", "jax"],
        "{found:#?}"
    );
    assert!(matches!(&found[4].dist, Dist::JaxTasks { tasks, .. } if *tasks == vec![1, 3]));
}

#[test]
fn lines_of_no_format_are_not_read() {
    let log = "epoch 3 step 100 loss 2.1\nsaving task list\nNCCL INFO comm 0x1 rank 0 nranks 2\n";
    assert!(read(log).is_empty());
}

#[test]
fn printed_times() {
    assert_eq!(
        printed_time("[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607]").as_deref(),
        Some("02:07:08")
    );
    assert_eq!(
        printed_time("E0628 09:59:18.010000 1002 api.py:988] failed").as_deref(),
        Some("09:59:18")
    );
    assert_eq!(
        printed_time("[2024-05-08 08:47:31,261] torch.distributed").as_deref(),
        Some("08:47:31")
    );
    assert_eq!(printed_time("Epoch 1 12:00:00"), None);
}

#[test]
fn jax_s_fatal_line_quoting_the_unhealthy_list_is_the_process_s_own_end() {
    // jax 0.11.2 on 2 H100s (tests/fixtures/dist/h100-jax/process0.log): the service's list,
    // then this process's fatal line, which quotes the same list.
    let log = "\
E1126 09:40:13.812832    1614 coordination_service.cc:1518] [6758338349401335226] Use error polling to propagate the following error to all tasks: UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):
1
The tasks have crashed. Check the task logs for an earlier error, or scheduler events (e.g. preemption, eviction) to debug further.
F1126 09:40:13.813672    1637 client.h:86] Terminating process because the JAX distributed service detected fatal errors. This most likely indicates that another task died; see the other task logs for more details. Disable Python buffering, i.e. `python -u`, to be sure to see all the previous output. absl::Status: UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):
1
The tasks have crashed.
";
    let found = read(log);
    let dists: Vec<&Dist> = found.iter().map(|f| &f.dist).collect();
    assert_eq!(
        dists,
        [
            &Dist::JaxTasks {
                why: JaxWhy::Unhealthy,
                tasks: vec![1]
            },
            &Dist::JaxFatal
        ],
        "{found:#?}"
    );
    assert!(found[1].message.starts_with("Terminating process"));
}
