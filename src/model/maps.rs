//! Each probed process's latest block map and what is derived from it in the update: per device,
//! the holes by size, the sentence that says whether a request fits, and the top sites with how
//! their bytes changed since the previous map. Also the probe's last answer and recording state.
//!
//! Kept per process (pid, start time), dropped with the process.

use std::collections::BTreeMap;

use crate::oom::sizes::human;
use crate::sample::pool_map::{AllocRecording, MapDevice, MapReason, ProbeAnswer, Site};
use crate::sample::{Framework, PoolMap, ProbeNews};

/// A process's maps and its probe's state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MapTrack {
    /// The latest map.
    pub map: Option<PoolMap>,
    /// Derived from `map`: one view per framework and device.
    pub views: Vec<DeviceView>,
    /// The views of the last map taken at an OOM (kept when later maps replace `map`).
    pub at_oom: Option<OomView>,
    pub answer: Option<ProbeAnswer>,
    pub recording: Option<AllocRecording>,
}

/// What the last OOM map showed.
#[derive(Debug, Clone, PartialEq)]
pub struct OomView {
    pub at_ms: u64,
    pub views: Vec<DeviceView>,
    /// The map itself (for snapshots, once a later map replaced it as the latest).
    pub map: PoolMap,
}

/// One framework's pool on one device, as the screen, alerts and snapshots show it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceView {
    /// Where its device is in the map: `frameworks[at.0].devices[at.1]`.
    pub at: (usize, usize),
    pub framework: Framework,
    pub index: u32,
    pub uuid: Option<String>,
    /// Whether the request of the moment fits: "a 1.00 GiB request does not fit: …".
    pub fit: String,
    /// "at the failure: 2.25 GiB free in 312 holes, largest 8.00 MiB" without the lead-in.
    pub free_words: Option<String>,
    /// Free memory by hole size; empty where the framework gives none.
    pub holes: Vec<HoleRow>,
    pub sites: Vec<SiteRow>,
    /// Why there are no sites.
    pub sites_reason: Option<String>,
    /// The sites whose blocks keep holes from going back to CUDA.
    pub stranding: Vec<SiteRow>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoleRow {
    /// "<1M", "1-8M", ">=512M" (ASCII: also the text form's and `--ascii`'s).
    pub label: String,
    pub count: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteRow {
    /// `train.py:87 collate` (already printable).
    pub label: String,
    pub blocks: u64,
    pub bytes: u64,
    pub change: SiteChange,
}

/// How a site's bytes changed since the previous map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SiteChange {
    /// There is no previous map (or it had no sites).
    Unknown,
    /// Not among the previous map's sites.
    New,
    By(i128),
}

/// Takes a sample's probe news in: answers, recording states and new maps.
pub fn ingest(maps: &mut BTreeMap<(u32, u64), MapTrack>, news: Vec<ProbeNews>) {
    for n in news {
        let track = maps.entry((n.pid, n.start_time)).or_default();
        track.answer = n.answer;
        track.recording = n.recording;
        if let Some(map) = n.map {
            track.take(*map);
        }
    }
}

impl MapTrack {
    fn take(&mut self, map: PoolMap) {
        let previous = self.map.as_ref();
        let views = views(&map, previous);
        if map.reason == MapReason::Oom {
            self.at_oom = Some(OomView {
                at_ms: map.at_ms,
                views: views.clone(),
                map: map.clone(),
            });
        }
        self.views = views;
        self.map = Some(map);
    }

    /// The view of the device with this UUID (or the only one, when the probe could not name it).
    pub fn view_for(&self, uuid: &str) -> Option<&DeviceView> {
        view_for(&self.views, uuid)
    }

    /// The map's device a view shows.
    pub fn device(&self, view: &DeviceView) -> Option<&MapDevice> {
        let f = self.map.as_ref()?.frameworks.get(view.at.0)?;
        f.devices.get(view.at.1)
    }
}

impl DeviceView {
    /// "at the failure: 2.25 GiB free in 312 holes, largest 8.00 MiB; held by train.py:87
    /// collate (1.50 GiB, 190 blocks), …".
    pub fn failure_words(&self) -> String {
        let free = self.free_words.clone().unwrap_or_else(|| self.fit.clone());
        let held = if self.sites.is_empty() {
            match &self.sites_reason {
                Some(why) => format!("no sites ({why})"),
                None => "no sites".into(),
            }
        } else {
            format!("held by {}", sites_words(&self.sites))
        };
        format!("at the failure: {free}; {held}")
    }
}

/// Sites named in one evidence line.
const NAMED: usize = 3;

/// `train.py:87 collate (1.50 GiB, 190 blocks)`.
pub fn site_words(s: &SiteRow) -> String {
    format!("{} ({}, {} blocks)", s.label, human(s.bytes), s.blocks)
}

/// The first sites' words, "…" after them when there are more.
pub fn sites_words(sites: &[SiteRow]) -> String {
    let mut words: Vec<String> = sites.iter().take(NAMED).map(site_words).collect();
    if sites.len() > NAMED {
        words.push("…".into());
    }
    words.join(", ")
}

pub fn view_for<'a>(views: &'a [DeviceView], uuid: &str) -> Option<&'a DeviceView> {
    views
        .iter()
        .find(|v| v.uuid.as_deref() == Some(uuid))
        .or(match views {
            [only] if only.uuid.is_none() => Some(only),
            _ => None,
        })
}

fn views(map: &PoolMap, previous: Option<&PoolMap>) -> Vec<DeviceView> {
    let mut out = Vec::new();
    for (fi, f) in map.frameworks.iter().enumerate() {
        for (di, d) in f.devices.iter().enumerate() {
            let before = previous.and_then(|p| {
                p.frameworks
                    .iter()
                    .filter(|pf| pf.framework == f.framework)
                    .flat_map(|pf| &pf.devices)
                    .find(|pd| pd.index == d.index)
            });
            let oom = map.oom.filter(|o| o.device == d.index);
            out.push(DeviceView {
                at: (fi, di),
                framework: f.framework,
                index: d.index,
                uuid: d.uuid.clone(),
                fit: fit(d, oom.map(|o| o.request)),
                free_words: free_words(d),
                holes: holes(d),
                sites: rows(d.sites.as_deref(), before.and_then(|b| b.sites.as_deref())),
                sites_reason: d.sites_reason.clone(),
                stranding: rows(d.stranding_sites.as_deref(), None),
            });
        }
    }
    out
}

/// Free bytes and how many holes they are in, where the map says.
fn free_and_holes(d: &MapDevice) -> Option<(u64, u64)> {
    let holes = d.holes.as_ref()?;
    let count = holes.iter().map(|h| h.1).sum();
    let bytes = holes.iter().map(|h| h.2).fold(0u64, u64::saturating_add);
    Some((d.free.unwrap_or(bytes), count))
}

/// "2.25 GiB free in 312 holes, largest 8.00 MiB".
fn free_words(d: &MapDevice) -> Option<String> {
    let (free, count) = free_and_holes(d)?;
    let largest = d.largest_free?;
    Some(format!(
        "{} free in {count} {}, largest {}",
        human(free),
        if count == 1 { "hole" } else { "holes" },
        human(largest)
    ))
}

/// Whether `request` (the failing one at an OOM) fits; without one, the largest request the
/// pool can serve now without new memory from CUDA.
pub fn fit(d: &MapDevice, request: Option<u64>) -> String {
    let (Some((free, count)), Some(largest)) = (free_and_holes(d), d.largest_free) else {
        let why = d
            .segments_reason
            .as_deref()
            .unwrap_or("the framework reports no free blocks");
        return format!("n/a: {why}");
    };
    let holes = if count == 1 { "hole" } else { "holes" };
    match request {
        Some(r) if r > largest => format!(
            "a {} request does not fit: {} is free in {count} {holes}, the largest {}",
            human(r),
            human(free),
            human(largest)
        ),
        Some(r) => format!(
            "a {} request failed though the largest hole is {}: a hole serves only its own stream and pool ({} free in {count} {holes})",
            human(r),
            human(largest),
            human(free)
        ),
        None if count == 0 || largest == 0 => {
            "no free block in the pool: every request takes new memory from CUDA".into()
        }
        None => format!(
            "the largest request that fits without new memory from CUDA is {}: {} is free in {count} {holes}",
            human(largest),
            human(free)
        ),
    }
}

fn holes(d: &MapDevice) -> Vec<HoleRow> {
    let mut lower: Option<u64> = None;
    let mut out = Vec::new();
    for h in d.holes.iter().flatten() {
        let label = match (lower, h.0) {
            (None, Some(u)) => format!("<{}", size_word(u)),
            (Some(l), Some(u)) => format!(
                "{}-{}",
                size_word(l).trim_end_matches(['M', 'G']),
                size_word(u)
            ),
            (Some(l), None) => format!(">={}", size_word(l)),
            (None, None) => "all".into(),
        };
        out.push(HoleRow {
            label,
            count: h.1,
            bytes: h.2,
        });
        lower = h.0;
    }
    out
}

/// A bucket bound: "1M", "512M", "2G" (binary units, as the screen writes sizes).
fn size_word(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
        format!("{}G", bytes >> 30)
    } else if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{}M", bytes >> 20)
    } else {
        crate::model::units::compact(bytes)
    }
}

fn rows(sites: Option<&[Site]>, before: Option<&[Site]>) -> Vec<SiteRow> {
    let same =
        |a: &Site, b: &Site| a.file == b.file && a.line == b.line && a.function == b.function;
    sites
        .into_iter()
        .flatten()
        .map(|s| SiteRow {
            label: s.label(),
            blocks: s.blocks,
            bytes: s.bytes,
            change: match before {
                None => SiteChange::Unknown,
                Some(b) => b.iter().find(|p| same(p, s)).map_or(SiteChange::New, |p| {
                    SiteChange::By(i128::from(s.bytes) - i128::from(p.bytes))
                }),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests;
