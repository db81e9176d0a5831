//! When a followed log's lines reached the disk, and so when a failure there happened.
//!
//! Each poll looks at the file's length first ([`Marks::look`]): a line is on disk after the last
//! look that had not reached its first byte and by the first look that held all of it
//! ([`Marks::seen`]), however late it is read. A failure is timed by the time its line starts
//! with where that time falls within those bounds ([`resolve`]: up to [`BUFFERED_MS`] before the
//! earlier one, as a buffered writer flushes late, and [`SLACK_MS`] after the later one); a time
//! outside them (in the future, or older than the log's growth can explain) is data, not the
//! time. A time that names no zone is a local time: its zone is the one of the offsets zones use
//! (UTC-12:00 to UTC+14:00, [`ZONES`]) that puts it within the bounds when only one does, learned
//! for the log, which settles later lines whose bounds more than one offset fits; gpumon reads
//! no time zone database.

use std::collections::VecDeque;

use crate::oom::stamp::{Seen, Written, year_of};

/// How long before its line was on disk a time the line gives is still believed (a writer that
/// buffers its output flushes lines minutes after it stamped them).
pub const BUFFERED_MS: u64 = 10 * 60_000;
/// How far after its line was seen on disk a time the line gives is still believed (a time
/// printed to the second, a writer's clock a little ahead); the failure is timed at the look.
pub const SLACK_MS: u64 = 2_000;
/// Looks kept for a file's unread bytes; past it every other one is forgotten (bounds get wider,
/// never wrong).
const MAX_MARKS: usize = 512;
/// The offsets zones have had lately, in minutes east of UTC (-12:00 to +14:00, 38 of them): a
/// local time is in one of these.
const ZONES: [i32; 38] = [
    -720, -660, -600, -570, -540, -480, -420, -360, -300, -240, -210, -180, -120, -60, 0, 60, 120,
    180, 210, 240, 270, 300, 330, 345, 360, 390, 420, 480, 525, 540, 570, 600, 630, 660, 720, 765,
    780, 840,
];

/// A look at a file: its length, the first and the last time it was that long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mark {
    len: u64,
    first_ms: u64,
    last_ms: u64,
}

/// The looks at one file that its unread bytes need, and the zone its local times were in.
#[derive(Debug, Default)]
pub struct Marks {
    marks: VecDeque<Mark>,
    /// A look before the file's first byte was written (a file read from its start), if known.
    since_ms: Option<u64>,
    /// Minutes east of UTC of the log's local times, as a line showed it.
    pub zone: Option<i32>,
}

impl Marks {
    /// The file is read again from its start (a new file at the path, or this one truncated):
    /// its bytes were written after `since_ms` (the poll before, which had not seen them).
    pub fn restart(&mut self, since_ms: Option<u64>) {
        self.marks.clear();
        self.since_ms = since_ms;
    }

    /// A look at `at_ms` found the file `len` bytes long.
    pub fn look(&mut self, len: u64, at_ms: u64) {
        match self.marks.back_mut() {
            Some(m) if m.len == len => m.last_ms = at_ms,
            Some(m) if m.len > len => {}
            _ => self.marks.push_back(Mark {
                len,
                first_ms: at_ms,
                last_ms: at_ms,
            }),
        }
        if self.marks.len() > MAX_MARKS {
            // Every other look but the first and last: a line's bounds widen to its neighbours'.
            let mut i = 0;
            let last = self.marks.len() - 1;
            self.marks.retain(|_| {
                i += 1;
                i == 1 || i == last + 1 || i % 2 == 0
            });
        }
    }

    /// When bytes `start..end` of the file were on disk, and what the file held past them.
    pub fn seen(&self, start: u64, end: u64) -> Seen {
        let before = self.marks.partition_point(|m| m.len <= start);
        let after_ms = match before {
            0 => self.since_ms,
            n => self.marks.get(n - 1).map(|m| m.last_ms),
        };
        let by = self.marks.partition_point(|m| m.len < end);
        Seen {
            after_ms,
            by_ms: self.marks.get(by).map(|m| m.first_ms),
            behind: self.len().unwrap_or(0).saturating_sub(end),
        }
    }

    /// Forgets the looks no byte from `offset` on needs (the last one before it bounds the next
    /// line from below).
    pub fn forget(&mut self, offset: u64) {
        while self.marks.len() > 1 && self.marks.get(1).is_some_and(|m| m.len <= offset) {
            if let Some(m) = self.marks.pop_front() {
                self.since_ms = Some(m.last_ms);
            }
        }
    }

    /// Since when the byte at `offset` has been on disk (a look found it), if one has.
    pub fn waiting_since(&self, offset: u64) -> Option<u64> {
        let i = self.marks.partition_point(|m| m.len <= offset);
        self.marks.get(i).map(|m| m.first_ms)
    }

    /// The length the latest look found.
    pub fn len(&self) -> Option<u64> {
        self.marks.back().map(|m| m.len)
    }
}

/// The instant `written` stands for, if one within the bounds `seen` gives (`by_ms`: the latest
/// it can be) is alone there, and the zone it showed (a local time's); `zone` is the log's zone
/// learned before, which settles a local time that more than one zone would put in the bounds.
pub fn resolve(
    written: &Written,
    after_ms: Option<u64>,
    by_ms: u64,
    zone: Option<i32>,
) -> Option<(u64, Option<i32>)> {
    let lo = after_ms
        .unwrap_or(by_ms)
        .min(by_ms)
        .saturating_sub(BUFFERED_MS);
    let hi = by_ms.saturating_add(SLACK_MS);
    let here = year_of(by_ms);
    let years = match written.year {
        Some(y) => vec![i32::from(y)],
        None => vec![here - 1, here, here + 1],
    };
    let zones: Vec<i32> = match written.zone {
        Some(z) => vec![i32::from(z)],
        None => ZONES.to_vec(),
    };
    let mut found = Vec::new();
    for year in years {
        let Some(naive) = written.as_utc(year) else {
            continue;
        };
        for z in &zones {
            let t = naive - i64::from(*z) * 60_000;
            if let Ok(t) = u64::try_from(t)
                && (lo..=hi).contains(&t)
            {
                found.push((t, *z));
            }
        }
    }
    let (t, z) = match found.as_slice() {
        [one] => *one,
        [] => return None,
        many => *many.iter().find(|(_, z)| Some(*z) == zone)?,
    };
    let learned = written.zone.is_none().then_some(z);
    Some((t.min(by_ms), learned))
}

#[cfg(test)]
mod tests;
