//! Block maps in a snapshot (optional `maps`, since `gpumon.snapshot/3`): per probed process the
//! latest map as its probe wrote it, the sentence that says whether a request fits on each
//! device, the map of its last OOM when a later map replaced it, and its recording state; built
//! from the machine, written as text, and read back into a machine (`to_machine`).

use serde::{Deserialize, Serialize};

use super::lines::Out;
use crate::model::Machine;
use crate::model::maps::{MapTrack, SiteChange, ingest};
use crate::model::units;
use crate::oom::sizes::human;
use crate::sample::pool_map::AllocRecording;
use crate::sample::{Framework, PoolMap, ProbeNews};

/// Sites the text form lists per device.
const TEXT_SITES: usize = 5;

/// One process's maps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MapDoc {
    pub pid: u32,
    /// Its start time, Unix seconds.
    pub start_time: u64,
    /// The latest map, exactly as the probe wrote it (`gpumon.map/1`'s fields, file and function
    /// names escaped).
    pub map: PoolMap,
    /// Per framework and device, whether the request of the moment fits.
    pub fits: Vec<FitDoc>,
    /// The map taken at its last OOM, when a later map replaced it as the latest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oom_map: Option<PoolMap>,
    /// "at the failure: …" per device, from the OOM's map.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub at_failure: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recording: Option<AllocRecording>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FitDoc {
    pub framework: Framework,
    pub index: u32,
    pub uuid: Option<String>,
    pub fit: String,
}

/// The maps of every process of the machine that has one.
pub fn docs(machine: &Machine) -> Vec<MapDoc> {
    machine
        .maps
        .iter()
        .filter_map(|(&(pid, start_time), t)| doc(pid, start_time, t))
        .collect()
}

fn doc(pid: u32, start_time: u64, t: &MapTrack) -> Option<MapDoc> {
    let map = t.map.clone()?;
    Some(MapDoc {
        pid,
        start_time,
        fits: t
            .views
            .iter()
            .map(|v| FitDoc {
                framework: v.framework,
                index: v.index,
                uuid: v.uuid.clone(),
                fit: v.fit.clone(),
            })
            .collect(),
        oom_map: t
            .at_oom
            .as_ref()
            .filter(|o| o.at_ms != map.at_ms)
            .map(|o| o.map.clone()),
        at_failure: t
            .at_oom
            .iter()
            .flat_map(|o| &o.views)
            .map(crate::model::maps::DeviceView::failure_words)
            .collect(),
        recording: t.recording.clone(),
        map,
    })
}

/// The maps back into a machine's tracks (the OOM's map first, then the latest).
pub fn restore(machine: &mut Machine, docs: &[MapDoc]) {
    for d in docs {
        let news = |map: Option<PoolMap>| ProbeNews {
            pid: d.pid,
            start_time: d.start_time,
            answer: None,
            recording: d.recording.clone(),
            map: map.map(Box::new),
            end: None,
            main_where: None,
        };
        ingest(
            &mut machine.maps,
            vec![news(d.oom_map.clone()), news(Some(d.map.clone()))],
        );
    }
}

/// The text form: per process and device, the sentence, the holes and the top sites.
pub(crate) fn text(o: &mut Out, docs: &[MapDoc]) {
    if docs.is_empty() {
        return;
    }
    let mut machine = Machine::new(crate::model::Config::new(1000, 1000));
    restore(&mut machine, docs);
    o.blank();
    o.para(0, "Block maps (from the allocator probes):");
    for d in docs {
        let Some(t) = machine.maps.get(&(d.pid, d.start_time)) else {
            continue;
        };
        let m = &d.map;
        o.para(
            2,
            &format!(
                "pid {}: map {} at {} UTC (took {:.1} ms)",
                d.pid,
                m.reason.word(),
                units::clock(m.at_ms),
                m.took_us as f64 / 1000.0
            ),
        );
        for v in &t.views {
            o.para(
                4,
                &format!("{} GPU {}: {}", v.framework.label(), v.index, v.fit),
            );
            if !v.holes.is_empty() {
                let holes: Vec<String> = v
                    .holes
                    .iter()
                    .map(|h| format!("{} {} ({})", h.label, h.count, human(h.bytes)))
                    .collect();
                o.para(6, &format!("holes: {}", holes.join(", ")));
            }
            if v.sites.is_empty() {
                let why = v.sites_reason.as_deref().unwrap_or("none given");
                o.para(6, &format!("sites n/a: {why}"));
            }
            for s in v.sites.iter().take(TEXT_SITES) {
                let change = match s.change {
                    SiteChange::By(b) => format!(", {} since the previous map", units::change(b)),
                    SiteChange::New => ", new since the previous map".into(),
                    SiteChange::Unknown => String::new(),
                };
                o.para(
                    6,
                    &format!(
                        "{}: {} in {} blocks{change}",
                        s.label,
                        human(s.bytes),
                        s.blocks
                    ),
                );
            }
        }
        for line in &d.at_failure {
            o.para(4, line);
        }
    }
}
