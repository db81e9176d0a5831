//! How a rank's end after the root cause is said: one that simply exits, and a JAX process the
//! coordination service ended, in its own words.

use super::{LOG, OOM, Run, T0, rank};
use crate::sample::Reading;

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
fn a_jax_process_ended_by_the_coordination_service_is_a_consequence_in_its_own_words() {
    // jax 0.11.2 on 2 H100s (tests/fixtures/dist/h100-jax): process 1 ran out of memory in its
    // pool; process 0's log then says the service saw task 1 die and ended process 0.
    let mut run = Run::new();
    let job = "jax:vm/127.0.0.1:12355";
    let logs = ["/srv/log/process0.log", "/srv/log/process1.log"];
    let jax = |run: &Run, pid: u32, r: u32| {
        let mut p = rank(run, pid, r, job);
        p.log = Reading::Value(vec![logs[r as usize].into()]);
        p
    };
    let p = vec![jax(&run, 1522, 0), jax(&run, 1523, 1)];
    run.tick(p, logs[1], &["W1126 09:40:04.618513    1523 bfc_allocator.cc:598] Allocator (GPU_0_bfc) ran out of memory trying to allocate 256.00MiB (rounded to 268435456) from the lower end requested by op"]);
    let p = vec![jax(&run, 1522, 0)];
    run.tick(p, logs[0], &[
        "E1126 09:40:13.812832    1614 coordination_service.cc:1518] [6758338349401335226] Use error polling to propagate the following error to all tasks: UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):",
        "1",
        "F1126 09:40:13.813672    1637 client.h:86] Terminating process because the JAX distributed service detected fatal errors. This most likely indicates that another task died; see the other task logs for more details. absl::Status: UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):",
        "1",
    ]);
    run.tick(Vec::new(), logs[0], &[]);
    let a = run.failures();
    assert_eq!(a.len(), 1, "{a:#?}");
    assert_eq!(a[0].pid, Some(1523));
    assert!(
        a[0].evidence.iter().any(|e| e.starts_with(&format!(
            "rank 0 terminated by JAX's distributed service at {} (another task died): a consequence of rank 1's OOM",
            crate::model::units::clock(T0 + 1000)
        ))),
        "{:#?}",
        a[0].evidence
    );
    let said = |w: &str| a[0].evidence.iter().filter(|e| e.contains(w)).count();
    assert_eq!(
        said("no failure line of its own"),
        0,
        "{:#?}",
        a[0].evidence
    );
    assert_eq!(
        said("rank 1 stopped sending heartbeats"),
        1,
        "{:#?}",
        a[0].evidence
    );
}
