//! What a paused screen does not take in: the samples' failures, notices, GPU events and RAS
//! answer (handed to the next sample taken in, so that a pause loses no alert), the latest time the source
//! reported, and a looping replay's new lap. The machine's clock (`now_ms`) stays where the view
//! stopped, so every "ago" on a paused screen stays as it was.

use std::collections::BTreeMap;

use super::Machine;
use crate::model::MapTrack;
use crate::sample::{GpuEvent, Sample};

/// Probed processes' block maps, by (pid, start time), as `Machine::maps` keeps them.
pub type Maps = BTreeMap<(u32, u64), MapTrack>;

/// Failures and notices held while a screen is paused, at most.
pub const MAX_HELD: usize = 256;

/// What the samples a paused screen did not take in carried besides their readings: at most
/// `MAX_HELD` failures and notices and `model::machine::MAX_EVENTS` events, the newest kept.
#[derive(Debug, Clone, Default)]
pub struct Held {
    pub failures: Vec<crate::oom::failure::Failure>,
    pub notices: Vec<String>,
    pub events: Vec<GpuEvent>,
    /// The latest time the source reported while paused (0: none).
    pub at_ms: u64,
    /// The latest sample's time among those held (0: none): the source was heard from, so a
    /// resumed screen is not stale for the samples it chose not to take in.
    pub sample_ms: u64,
    /// A looping replay started lap `n` while paused: the machine starts again when the screen
    /// resumes, with the block maps its probes sent since (kept here, not in the old lap's).
    pub lap: Option<(u32, Maps)>,
    /// The latest RAS answer among the samples held.
    pub ras: Option<crate::sample::RasStatus>,
}

/// Appends `more` to `v`, keeping the newest `max`.
fn append_bounded<T>(v: &mut Vec<T>, more: Vec<T>, max: usize) {
    v.extend(more);
    let over = v.len().saturating_sub(max);
    v.drain(..over);
}

impl Machine {
    /// A sample a paused screen does not take in (it keeps its rows): its probes' news is taken
    /// in (an OOM's map is never lost, nor a process's end), its time, failures, notices and
    /// events held for the next sample taken in.
    pub fn hold(&mut self, mut s: Sample) {
        let lives = crate::model::process::lives(&mut s.probes);
        if self.held.lap.is_none() {
            crate::model::process::hear(&mut self.processes, &lives);
        }
        let maps = match &mut self.held.lap {
            Some((_, maps)) => maps,
            None => &mut self.maps,
        };
        crate::model::maps::ingest(maps, std::mem::take(&mut s.probes));
        self.hold_time(s.at_ms);
        self.held.sample_ms = self.held.sample_ms.max(s.at_ms);
        append_bounded(&mut self.held.failures, s.failures, MAX_HELD);
        append_bounded(&mut self.held.notices, s.notices, MAX_HELD);
        append_bounded(&mut self.held.events, s.events, super::MAX_EVENTS);
        if s.ras.is_some() {
            self.held.ras = s.ras;
        }
    }

    /// A time a paused screen is told (a sample's, the wall clock's, a failure's) and does not
    /// show: the view's clock stays, [`Machine::latest_ms`] moves.
    pub fn hold_time(&mut self, at_ms: u64) {
        self.held.at_ms = self.held.at_ms.max(at_ms);
    }

    /// A looping replay's new lap reached a paused screen: what was held from the old lap is
    /// dropped (the new lap starts clean), the restart waits for [`Machine::resume`].
    pub fn hold_lap(&mut self, lap: u32) {
        self.held.failures.clear();
        self.held.notices.clear();
        self.held.events.clear();
        self.held.ras = None;
        self.held.lap = Some((lap, BTreeMap::new()));
    }

    /// The screen resumes: a lap that began meanwhile starts, and the clock catches up with
    /// the latest time held (the failures and notices wait for the next sample).
    pub fn resume(&mut self) {
        if let Some((lap, maps)) = self.held.lap.take() {
            self.restart(lap);
            self.maps = maps;
        }
        let at = std::mem::take(&mut self.held.at_ms);
        self.observe_time(at);
    }

    /// The latest time known: the view's clock, or a later one a paused screen was told.
    pub fn latest_ms(&self) -> u64 {
        self.now_ms.max(self.held.at_ms)
    }

    /// The time of the latest sample the source gave, taken in or held by a pause: how old the
    /// readings are ("stale") is measured from it.
    pub fn last_heard_ms(&self) -> Option<u64> {
        let held = Some(self.held.sample_ms).filter(|t| *t > 0);
        self.last_sample_ms.max(held)
    }

    /// Puts what was held while paused before the sample's own failures, notices and events.
    pub fn unhold(&mut self, s: &mut Sample) {
        s.failures
            .splice(0..0, std::mem::take(&mut self.held.failures));
        s.notices
            .splice(0..0, std::mem::take(&mut self.held.notices));
        s.events.splice(0..0, std::mem::take(&mut self.held.events));
        let held_ras = self.held.ras.take();
        if s.ras.is_none() {
            s.ras = held_ras;
        }
        self.held.sample_ms = 0;
    }
}

#[cfg(test)]
mod tests;
