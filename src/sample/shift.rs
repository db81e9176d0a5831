//! A sample moved later in time, every time in it alike (a looping replay's next lap): the
//! sample's own, its failures' (and when their lines were read), its logs' backlogs', events',
//! each process's start and pool reading, and what its probes said (a map's time and its
//! process's start), so that a map still joins its process and its OOM, and nothing in a lap is
//! older than the lap.

use super::{Reading, Sample};

impl Sample {
    /// Every time in the sample `by_s` seconds later (whole seconds: a process's start time is
    /// kept in seconds, and shifts with the rest).
    pub fn shift(&mut self, by_s: u64) {
        let ms = by_s.saturating_mul(1000);
        let later = |t: &mut u64| *t = t.saturating_add(ms);
        later(&mut self.at_ms);
        for f in &mut self.failures {
            later(&mut f.at_ms);
            if let Some(t) = &mut f.timing {
                later(&mut t.read_ms);
            }
        }
        for l in &mut self.logs {
            l.since_ms.iter_mut().for_each(&later);
        }
        self.events.iter_mut().for_each(|e| later(&mut e.at_ms));
        for p in &mut self.processes {
            if let Reading::Value(start) = &mut p.start_time {
                *start = start.saturating_add(by_s);
            }
            if let Reading::Value(pool) = &mut p.pool {
                later(&mut pool.at_ms);
            }
        }
        for news in &mut self.probes {
            news.start_time = news.start_time.saturating_add(by_s);
            if let Some(since) = news.recording.as_mut().and_then(|r| r.since_ms.as_mut()) {
                later(since);
            }
            if let Some(map) = &mut news.map {
                map.start_time = map.start_time.saturating_add(by_s);
                later(&mut map.at_ms);
            }
        }
    }
}
