//! Readings that change slowly, re-read on their own period instead of every tick: `Period` says
//! when one is due again. The periods are short enough that a change still shows within seconds.

use std::time::Duration;

/// What a process keeps for most of its life but may change (its command line after
/// `setproctitle`, its cgroup after a move, its framework after a late import, its user name
/// after an edit of /etc/passwd): re-read this often, and at once for a new (pid, start time).
pub const LIFETIME: Duration = Duration::from_secs(30);
/// Per-process GPU utilisation (NVML keeps its samples between reads; the newest is shown).
pub const PROCESS_UTIL: Duration = Duration::from_secs(5);
/// Whether MIG is on, for a GPU where it was off (a GPU with MIG on is read every tick): it
/// changes only with a GPU reset, which ends every process on it. 0.37 ms a GPU on an H200.
pub const MIG_MODE: Duration = Duration::from_secs(30);
/// A GPU's memory health (ECC mode and counters, remapped rows, retired pages): counters that
/// change rarely, and whose events (Xid 48, 63, 94, …) are heard at once by the event wait.
/// dcgm-exporter's default for every field; 1.2-1.6 ms a GPU on an H200.
pub const HEALTH: Duration = Duration::from_secs(30);
/// NCCL's RAS service, while a distributed job runs (`source::ras`): its answer is a
/// collection over every rank, so it is not asked every tick.
pub const RAS: Duration = Duration::from_secs(10);
/// The same after a refused connection (no NCCL >= 2.24 job there, or its RAS off, or not yet:
/// a job's ranks start RAS with their first communicator, seconds after they start; on 2 H200s a
/// first ask before it and 60 s of waiting put the first answer 70 s into the job).
pub const RAS_REFUSED: Duration = Duration::from_secs(20);

/// When a slow reading is due: at its first look, then once `every` has passed since the last.
#[derive(Debug, Clone, Copy)]
pub struct Period {
    every_ms: u64,
    last_ms: Option<u64>,
}

impl Period {
    pub fn new(every: Duration) -> Self {
        Period {
            every_ms: u64::try_from(every.as_millis()).unwrap_or(u64::MAX),
            last_ms: None,
        }
    }

    /// Whether it is due at `now_ms`; if so, the period starts again from now. A clock that
    /// went back makes it due (the reading is not trusted to be recent).
    pub fn due(&mut self, now_ms: u64) -> bool {
        let due = self
            .last_ms
            .is_none_or(|last| now_ms < last || now_ms - last >= self.every_ms);
        if due {
            self.last_ms = Some(now_ms);
        }
        due
    }

    /// Whether it would be due at `now_ms`, without starting it again.
    pub fn is_due(&self, now_ms: u64) -> bool {
        self.last_ms
            .is_none_or(|last| now_ms < last || now_ms - last >= self.every_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_first_then_once_per_period() {
        let mut p = Period::new(Duration::from_secs(5));
        assert!(p.due(1_000));
        assert!(!p.due(1_001) && !p.due(5_999));
        assert!(p.is_due(6_000) && !p.is_due(5_999));
        assert!(p.due(6_000));
        assert!(!p.due(10_999));
        // The clock went back: read again rather than trust an old value.
        assert!(p.due(3_000));
    }
}
