//! An OOM line with no rank in a log several processes write (a rank that catches its OOM and
//! prints it under torchrun, whose ranks share its output): joined to the one writer whose
//! allocator probe counted an OOM beside it. Only when every writer is probed and exactly one
//! counted one; the line waits a few seconds for the count (the probe writes every second by
//! default), and is raised as it is when none comes.

use crate::logs::LINGER_MS;
use crate::model::{Machine, ProcessTrack};
use crate::oom::failure::Failure;

/// How long such a line waits for a writer's probe to count its OOM.
pub const COUNT_WAIT_MS: u64 = 3_000;
/// A count that rose this long before the line read is the same OOM.
const COUNT_BEFORE_MS: u64 = 10_000;

/// A line that says an OOM and nothing of whose it is.
fn plain_oom(f: &Failure) -> bool {
    f.pid.is_none()
        && f.rank.is_none()
        && f.local_rank.is_none()
        && f.prefix.is_none()
        && f.dist.is_none()
        && f.fault.is_none()
}

/// Whether the process of `t` ended too long before `at_ms` to have written a line read then
/// (its log is read a little after it ends).
pub(super) fn gone_before(machine: &Machine, t: &ProcessTrack, at_ms: u64) -> bool {
    t.exited_ms
        .is_some_and(|e| e.saturating_add(LINGER_MS + 2 * machine.config.interval_ms) < at_ms)
}

/// The processes writing `f`'s log that could have written it, when there are several and every
/// one is probed.
fn writers<'a>(machine: &'a Machine, f: &Failure) -> Option<Vec<&'a ProcessTrack>> {
    let all: Vec<&ProcessTrack> = machine
        .processes
        .values()
        .filter(|t| t.sample.log.value().is_some_and(|l| l.contains(&f.log)))
        .filter(|t| !gone_before(machine, t, f.at_ms))
        .collect();
    (all.len() >= 2 && all.iter().all(|t| t.sample.pool.value().is_some())).then_some(all)
}

/// The pids among `f`'s writers whose probe counted an OOM near it.
fn counted(machine: &Machine, f: &Failure) -> Option<Vec<u32>> {
    let mut pids: Vec<u32> = writers(machine, f)?
        .iter()
        .filter(|t| {
            t.probe_oom.is_some_and(|o| {
                o.rose_ms + COUNT_BEFORE_MS >= f.at_ms && o.rose_ms <= f.at_ms + COUNT_WAIT_MS
            })
        })
        .map(|t| t.sample.pid)
        .collect();
    pids.sort_unstable();
    pids.dedup();
    Some(pids)
}

/// The one writer whose probe counted the OOM `f` says.
pub fn counted_by(machine: &Machine, f: &Failure) -> Option<u32> {
    if !plain_oom(f) {
        return None;
    }
    match counted(machine, f)?.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// Whether `f` waits (at `at_ms`) for one of its log's writers to count it.
pub fn waits_for_count(f: &Failure, machine: &Machine, at_ms: u64) -> bool {
    plain_oom(f)
        && at_ms < f.at_ms.saturating_add(COUNT_WAIT_MS)
        && counted(machine, f).is_some_and(|pids| pids.is_empty())
}
