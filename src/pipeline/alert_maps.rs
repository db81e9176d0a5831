//! Maps asked for during alerts: while a leak or fragmentation alert on a probed process is
//! active (`analysis::maps::wanted`), its probe is asked for a map at most every
//! [`EVERY_MS`], never on every tick; the second map [`SECOND_MS`] after the first, since the
//! line that climbs is named from two maps (a leak that reaches its cap in a minute would
//! otherwise be over before it: on an H100, GPT-2 keeping logits slices failed 24 s after its
//! warning). The front ends (the screen's loop, `serve`, `record`) hold one and write what `due`
//! returns.

use std::collections::HashMap;

use crate::analysis::maps::wanted;
use crate::model::Machine;
use crate::sample::request::{Ask, Purpose, Verb, request_id};

/// The shortest time between two maps asked for one process during an alert.
pub const EVERY_MS: u64 = 30_000;
/// The time from the first map asked for during an alert to the second.
pub const SECOND_MS: u64 = 10_000;

#[derive(Debug, Default)]
pub struct AlertMaps {
    /// When a process's probe was last asked, and how many times during its alert.
    asked: HashMap<(u32, u64), (u64, u32)>,
}

impl AlertMaps {
    /// The requests to write now for `machine` (which took its latest sample at `now_ms`).
    pub fn due(&mut self, machine: &Machine, now_ms: u64) -> Vec<Ask> {
        let want = wanted(machine, now_ms);
        self.asked.retain(|k, _| want.contains(k));
        let mut out = Vec::new();
        for (pid, start) in want {
            let last = self.asked.get(&(pid, start)).copied();
            let due = last.is_none_or(|(t, n)| {
                now_ms.saturating_sub(t) >= if n == 1 { SECOND_MS } else { EVERY_MS }
            });
            if due {
                let n = last.map_or(1, |(_, n)| n.saturating_add(1));
                self.asked.insert((pid, start), (now_ms, n));
                out.push(Ask {
                    pid,
                    start_time: Some(start),
                    verb: Verb::Map,
                    id: request_id(now_ms, Purpose::Alert),
                });
            }
        }
        out
    }
}
