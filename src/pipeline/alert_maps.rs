//! Maps asked for during alerts: while a leak or fragmentation alert on a probed process is
//! active (`analysis::maps::wanted`), its probe is asked for a map at most every
//! [`EVERY_MS`], never on every tick. The front ends (the screen's loop, `serve`) hold one and
//! write what `due` returns.

use std::collections::HashMap;

use crate::analysis::maps::wanted;
use crate::model::Machine;
use crate::sample::request::{Ask, Purpose, Verb, request_id};

/// The shortest time between two maps asked for one process during an alert.
pub const EVERY_MS: u64 = 30_000;

#[derive(Debug, Default)]
pub struct AlertMaps {
    asked: HashMap<(u32, u64), u64>,
}

impl AlertMaps {
    /// The requests to write now for `machine` (which took its latest sample at `now_ms`).
    pub fn due(&mut self, machine: &Machine, now_ms: u64) -> Vec<Ask> {
        let want = wanted(machine, now_ms);
        self.asked.retain(|k, _| want.contains(k));
        let mut out = Vec::new();
        for (pid, start) in want {
            let last = self.asked.get(&(pid, start));
            if last.is_none_or(|t| now_ms.saturating_sub(*t) >= EVERY_MS) {
                self.asked.insert((pid, start), now_ms);
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
