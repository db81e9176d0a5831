//! A GPU's track: made when the GPU is first sampled, and how long its utilisation has stood
//! idle or busy (`UtilSpell`), which a job's stalled rank is seen by (`analysis::ranks::stalled`:
//! its GPU idle while the others spin in the collective it has not reached).

use super::GpuTrack;
use crate::model::Ring;
use crate::model::health::XidTally;
use crate::sample::GpuSample;

/// At most this much utilisation is idle.
pub const IDLE_PCT: u32 = 5;
/// At least this much is busy (NCCL's kernels waiting in a collective read 100 %).
pub const BUSY_PCT: u32 = 80;

/// Where a GPU's utilisation stands, and since when (ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtilSpell {
    pub state: UtilState,
    pub since_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UtilState {
    Idle,
    Busy,
    Between,
}

impl UtilState {
    fn of(pct: u32) -> UtilState {
        if pct <= IDLE_PCT {
            UtilState::Idle
        } else if pct >= BUSY_PCT {
            UtilState::Busy
        } else {
            UtilState::Between
        }
    }
}

impl GpuTrack {
    pub(super) fn new(g: &GpuSample, capacity: usize) -> GpuTrack {
        GpuTrack {
            sample: g.clone(),
            segments: None,
            used: Ring::with_tiers(capacity),
            lost_since_ms: None,
            total: None,
            unattributed: 0,
            alerts: 0,
            infos: 0,
            troubles: Vec::new(),
            xids: XidTally::default(),
            util: None,
        }
    }

    /// Takes a utilisation reading: the spell goes on while its state stays; an unreadable one
    /// ends it.
    pub(super) fn note_util(&mut self, at_ms: u64, pct: Option<u32>) {
        self.util = pct.map(|p| {
            let state = UtilState::of(p);
            match self.util {
                Some(s) if s.state == state => s,
                _ => UtilSpell {
                    state,
                    since_ms: at_ms,
                },
            }
        });
    }

    /// How long it has been idle at `now_ms` (0 when it is not).
    pub fn idle_for(&self, now_ms: u64) -> u64 {
        self.spell_for(UtilState::Idle, now_ms)
    }

    /// How long it has been busy at `now_ms` (0 when it is not).
    pub fn busy_for(&self, now_ms: u64) -> u64 {
        self.spell_for(UtilState::Busy, now_ms)
    }

    fn spell_for(&self, state: UtilState, now_ms: u64) -> u64 {
        self.util
            .filter(|s| s.state == state)
            .map_or(0, |s| now_ms.saturating_sub(s.since_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::scripted::build::gpu;

    #[test]
    fn a_spell_lasts_while_its_state_does() {
        let g = gpu(0, 80, 1, 0);
        let mut t = GpuTrack::new(&g, 10);
        t.note_util(1_000, Some(0));
        t.note_util(2_000, Some(3));
        assert_eq!(t.idle_for(5_000), 4_000);
        t.note_util(6_000, Some(100));
        assert_eq!((t.idle_for(7_000), t.busy_for(7_000)), (0, 1_000));
        t.note_util(8_000, None);
        assert_eq!(t.busy_for(9_000), 0);
    }
}
