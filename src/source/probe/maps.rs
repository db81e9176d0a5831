//! What the probe directories' scan remembers between ticks about maps and answers: each map
//! file's stamp (a map is read and parsed only when its file changed), and what was last told
//! of each process (a sample carries a process's news only when something changed).

use std::collections::HashMap;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;

use super::ProbeReport;
use crate::sample::pool_map::AllocRecording;
use crate::sample::{MainWhere, PoolMap, ProbeNews, ProcessEnd, WhereNews};

/// A file's identity and last change: a new map is a new file (the probe renames it in place).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stamp {
    inode: u64,
    len: u64,
    mtime_ns: i128,
}

impl Stamp {
    pub(super) fn of(meta: &Metadata) -> Self {
        Stamp {
            inode: meta.ino(),
            len: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        }
    }
}

/// What a process's news last said.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Told {
    start_time: u64,
    answer: Option<u64>,
    recording: Option<AllocRecording>,
    map_at_ms: Option<u64>,
    end: Option<ProcessEnd>,
    /// Where its main thread stood, without the time it was read (which moves every tick).
    place: Option<MainWhere>,
}

#[derive(Debug, Default)]
pub(super) struct MapWatch {
    stamps: HashMap<u32, Stamp>,
    told: HashMap<u32, Told>,
}

impl MapWatch {
    /// Whether pid's map file is new or changed since it was last looked at (and remembers it).
    pub fn changed(&mut self, pid: u32, meta: &Metadata) -> bool {
        let stamp = Stamp::of(meta);
        self.stamps.insert(pid, stamp) != Some(stamp)
    }

    /// The news of this scan: for each process whose probe file was read, what changed since the
    /// last scan (its answer, its recording state, a map of this process that is newer, its end,
    /// where its main thread stands or that it moved again); for each process that ended since,
    /// the end its last file recorded, if not told yet. Maps of an earlier process with the
    /// same PID are refused through `refuse`.
    pub fn news(
        &mut self,
        reports: &HashMap<u32, ProbeReport>,
        ended: &HashMap<u32, ProbeReport>,
        maps: Vec<PoolMap>,
        refuse: &mut dyn FnMut(u32, String),
    ) -> Vec<ProbeNews> {
        let mut maps: HashMap<u32, PoolMap> = maps.into_iter().map(|m| (m.pid, m)).collect();
        let mut news = Vec::new();
        for (pid, r) in reports {
            let map = maps.remove(pid).filter(|m| {
                let same = m.start_time.abs_diff(r.start_time) <= 1;
                if !same {
                    refuse(*pid, "it is from an earlier process with this PID".into());
                }
                same
            });
            let before = self.told.get(pid).filter(|t| t.start_time == r.start_time);
            let map = map.filter(|m| before.is_none_or(|b| b.map_at_ms != Some(m.at_ms)));
            let now = Told {
                start_time: r.start_time,
                answer: r.answer.as_ref().map(|a| a.id),
                recording: r.recording.clone(),
                map_at_ms: map
                    .as_ref()
                    .map(|m| m.at_ms)
                    .or(before.and_then(|b| b.map_at_ms)),
                end: r.end.clone(),
                place: r.main_where.clone().map(|w| MainWhere { at_ms: 0, ..w }),
            };
            if map.is_some() || before != Some(&now) {
                let main_where = place_news(r, before);
                news.push(ProbeNews {
                    pid: *pid,
                    start_time: r.start_time,
                    answer: r.answer.clone(),
                    recording: r.recording.clone(),
                    map: map.map(Box::new),
                    end: r
                        .end
                        .clone()
                        .filter(|e| before.is_none_or(|b| b.end.as_ref() != Some(e))),
                    main_where,
                });
            }
            self.told.insert(*pid, now);
        }
        for (pid, r) in ended {
            let before = self.told.get(pid).filter(|t| t.start_time == r.start_time);
            let end = r
                .end
                .clone()
                .filter(|e| before.is_none_or(|b| b.end.as_ref() != Some(e)));
            let main_where = place_news(r, before);
            if end.is_some() || main_where.is_some() {
                news.push(ProbeNews {
                    pid: *pid,
                    start_time: r.start_time,
                    answer: r.answer.clone(),
                    recording: r.recording.clone(),
                    map: None,
                    end,
                    main_where,
                });
            }
        }
        self.told.retain(|pid, _| reports.contains_key(pid));
        self.stamps.retain(|pid, _| reports.contains_key(pid));
        news.sort_by_key(|n| n.pid);
        news
    }
}

/// What a report says of the main thread's place against what was told: where it stands now
/// (a new place), that it moved (no place any more), or nothing new. A place's read time, which
/// moves every tick, is no news.
fn place_news(r: &ProbeReport, before: Option<&Told>) -> Option<WhereNews> {
    let told = before.and_then(|b| b.place.as_ref());
    match (&r.main_where, told) {
        (Some(w), Some(t))
            if w.frames == t.frames && w.since_ms == t.since_ms && w.asked == t.asked =>
        {
            None
        }
        (Some(w), _) => Some(WhereNews::At(w.clone())),
        (None, Some(_)) => Some(WhereNews::Moved { at_ms: r.at_ms }),
        (None, None) => None,
    }
}
