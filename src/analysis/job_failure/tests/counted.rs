//! An OOM line with no rank in torchrun's shared output (a rank that catches its OOM and prints
//! it): joined to the rank whose probe counted the OOM, in the same sample or a little later;
//! never when two counted one or a writer has no probe.

use super::{LOG, Run, rank};
use crate::analysis::test_pools::torch;
use crate::model::Level;
use crate::sample::{ProcessSample, Reading};
use crate::source::scripted::build::GIB;

const JOB: &str = "torchrun:abc";
/// What ranks.py printed on a 2xH100 (tests/fixtures/workloads/ddp-rank0-leak): no prefix.
const LINE: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 786.00 MiB. GPU 0 has a total capacity of 79.18 GiB of which 64.01 GiB is free. Including non-PyTorch memory, this process has 15.16 GiB memory in use. 14.00 GiB allowed; Of the allocated memory 12.68 GiB is allocated by PyTorch, and 950.27 MiB is reserved by PyTorch but unallocated.";

/// Rank `r` as pid `pid`, probed, its probe having counted `ooms`.
fn probed(run: &Run, pid: u32, r: u32, ooms: u64) -> ProcessSample {
    let mut p = rank(run, pid, r, JOB);
    let mut pool = torch(12 * GIB, 13 * GIB, GIB, Some(GIB), Some(14 * GIB));
    pool.ooms = Some(ooms);
    p.pool = Reading::Value(pool);
    p
}

/// A run of two ranks: `counts[k]` is what each rank's probe counted at second k; the OOM line
/// is read at second `line_at`. Its failure alerts.
fn run(counts: &[(u64, u64)], line_at: usize, probe_1: bool) -> Vec<crate::model::Alert> {
    let mut run = Run::new();
    for (k, (c0, c1)) in counts.iter().enumerate() {
        let mut p1 = probed(&run, 1447, 1, *c1);
        if !probe_1 {
            p1.pool = Reading::na("not probed");
        }
        let p = vec![probed(&run, 1446, 0, *c0), p1];
        let lines: &[&str] = if k == line_at { &[LINE] } else { &[] };
        run.tick(p, LOG, lines);
    }
    run.failures().into_iter().cloned().collect()
}

#[test]
fn the_rank_whose_probe_counted_it_owns_the_line() {
    // The count rose in the sample that read the line (as on the H100).
    let a = run(&[(0, 0), (1, 0), (1, 0), (1, 0), (1, 0)], 1, true);
    assert_eq!(a.len(), 1, "{a:#?}");
    assert_eq!((a[0].pid, a[0].job.as_deref()), (Some(1446), Some(JOB)));
    assert_eq!(a[0].level, Level::Failure);
    assert!(
        a[0].title.starts_with("rank 0: pid 1446 PyTorch OOM"),
        "{}",
        a[0].title
    );
    // The count came two seconds after the line: the line waited for it.
    let a = run(&[(0, 0), (0, 0), (0, 0), (1, 0), (1, 0), (1, 0)], 1, true);
    assert_eq!(a.len(), 1, "{a:#?}");
    assert_eq!(a[0].pid, Some(1446));
}

#[test]
fn two_counts_or_a_writer_without_a_probe_leave_it_unjoined() {
    // Both ranks counted an OOM: whose line this is cannot be told.
    let a = run(&[(0, 0), (1, 1), (1, 1), (1, 1), (1, 1), (1, 1)], 1, true);
    let unjoined: Vec<_> = a.iter().filter(|x| x.pid.is_none()).collect();
    assert_eq!(unjoined.len(), 1, "{a:#?}");
    // Rank 1 has no probe: it may have printed the line; no wait, no join.
    let a = run(&[(0, 0), (1, 0), (1, 0)], 1, false);
    assert!(a.iter().any(|x| x.pid.is_none()), "{a:#?}");
    // No count within the wait: raised as it is, three seconds on.
    let a = run(&[(0, 0), (0, 0), (0, 0), (0, 0), (0, 0), (0, 0)], 1, true);
    assert_eq!(a.len(), 1, "{a:#?}");
    assert_eq!(a[0].pid, None);
}
