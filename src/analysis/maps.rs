//! What block maps add to alerts: the map at an OOM in the failure's evidence ("at the failure:
//! 2.25 GiB free in 312 holes, largest 8 MiB; held by train.py:87 collate (1.5 GiB, 190 blocks),
//! …"), the site whose bytes climb between maps for a leak, the sites that strand holes for a
//! fragmentation (in the alert itself when maps came before it, else as a finding of their own
//! once they arrive); and which processes' alerts are active, so a front end asks their probes
//! for maps (`pipeline::alert_maps`).

use crate::analysis::risk::Risk;
use crate::model::maps::{DeviceView, SiteChange, SiteRow, site_words, sites_words, view_for};
use crate::model::{Level, Machine, ProcessTrack};
use crate::oom::sizes::human;

/// Alert classes whose process gets a map asked for while they hold (a rank that grows alone is
/// that process's leak, `ranks.rs`).
pub const MAP_CLASSES: [&str; 3] = ["leak", "fragmentation-risk", "rank-grows-alone"];

/// How far apart a failure and the OOM map taken at it may be (the map is written at the failing
/// request, the log line read at the next tick): an older OOM map is another failure's.
const SAME_OOM_MS: u64 = 60_000;

/// The failing process's map at its OOM (a failure at `at_ms`), as one evidence line; `None`
/// without such a map.
pub fn at_failure(machine: &Machine, pid: u32, gpu: Option<&str>, at_ms: u64) -> Option<String> {
    let track = machine
        .maps
        .iter()
        .filter(|((p, _), _)| *p == pid)
        .filter_map(|(_, t)| t.at_oom.as_ref())
        .find(|o| o.at_ms.abs_diff(at_ms) <= SAME_OOM_MS)?;
    let view = match gpu {
        Some(uuid) => view_for(&track.views, uuid),
        None => track.views.first(),
    }?;
    Some(view.failure_words())
}

/// What the maps add to a probe-based finding of `pid` on `gpu`: a failure gets the map at its
/// OOM, a leak or fragmentation risk its sites (nothing without a map).
pub fn evidence(machine: &Machine, class: &str, pid: u32, gpu: &str, failure: bool) -> Vec<String> {
    if failure {
        let at = machine.now_ms;
        return at_failure(machine, pid, Some(gpu), at)
            .into_iter()
            .collect();
    }
    if !MAP_CLASSES.contains(&class) {
        return Vec::new();
    }
    crate::model::processes_on(&machine.processes, gpu)
        .find(|t| t.sample.pid == pid && t.exited_ms.is_none())
        .map(|t| risk_evidence(machine, t, class))
        .unwrap_or_default()
}

/// The evidence a map adds to a leak or fragmentation alert of `t` (empty without a map).
pub fn risk_evidence(machine: &Machine, t: &ProcessTrack, class: &str) -> Vec<String> {
    let Some(view) = machine
        .map_of(t.sample.pid, t.key.start_time)
        .and_then(|m| m.view_for(&t.sample.gpu_uuid))
    else {
        return Vec::new();
    };
    match class {
        "leak" | "rank-grows-alone" => climbing(view)
            .map(|s| {
                format!(
                    "the site whose bytes climb between maps: {} (+{} since the previous map)",
                    site_words(s),
                    human(match s.change {
                        SiteChange::By(b) => u64::try_from(b).unwrap_or(0),
                        _ => s.bytes,
                    })
                )
            })
            .into_iter()
            .collect(),
        _ if !view.stranding.is_empty() => vec![format!(
            "the blocks between the holes are held by {}",
            sites_words(&view.stranding)
        )],
        _ => Vec::new(),
    }
}

/// Findings maps make once they arrive during an alert (raised once each, as every risk): the
/// site whose bytes climbed between the last two maps of a leaking process (`leak-site`), and
/// the sites whose blocks keep a fragmenting pool's holes (`fragmentation-sites`).
pub fn site_risks(machine: &Machine) -> Vec<Risk> {
    let mut out = Vec::new();
    for a in &machine.alerts {
        let (Some(pid), Some(gpu)) = (a.pid, a.gpu_uuid.as_deref()) else {
            continue;
        };
        let Some(t) = crate::model::processes_on(&machine.processes, gpu)
            .find(|t| t.sample.pid == pid && t.exited_ms.is_none())
        else {
            continue;
        };
        let Some(view) = machine
            .map_of(pid, t.key.start_time)
            .and_then(|m| m.view_for(gpu))
        else {
            continue;
        };
        let fw = view.framework.label();
        let remedy = a.remedy.clone().unwrap_or_default();
        // A leaking pool (a leak alert on it, or its stranding line the one that climbs): the
        // blocks between its holes are the leak's, and so is the first remedy.
        let leaking =
            machine.alerts.iter().any(|l| {
                l.class == "leak" && l.pid == Some(pid) && l.gpu_uuid.as_deref() == Some(gpu)
            }) || climbing(view)
                .is_some_and(|c| view.stranding.first().is_some_and(|s| s.label == c.label));
        let found = match a.class.as_str() {
            "leak" | "rank-grows-alone" => climbing(view).map(|s| {
                (
                    "leak-site",
                    format!("pid {pid} {fw} leak: {} climbs between its maps", s.label),
                    risk_evidence(machine, t, "leak"),
                    at_site(&remedy, pid, s, Some(view.framework)),
                )
            }),
            "fragmentation-risk" if !view.stranding.is_empty() && leaking => {
                let s = climbing(view).unwrap_or(&view.stranding[0]);
                Some((
                    "fragmentation-sites",
                    format!(
                        "pid {pid} {fw} fragmentation from a leak: its holes sit between the blocks of {}, which hold the leak",
                        s.label
                    ),
                    risk_evidence(machine, t, "fragmentation-risk"),
                    crate::analysis::growth::leak_remedy_at(
                        pid,
                        Some(&site_words(s)),
                        Some(view.framework),
                    ),
                ))
            }
            "fragmentation-risk" if !view.stranding.is_empty() => Some((
                "fragmentation-sites",
                format!(
                    "pid {pid} {fw} fragmentation: its holes sit between the blocks of {}",
                    view.stranding[0].label
                ),
                risk_evidence(machine, t, "fragmentation-risk"),
                remedy,
            )),
            _ => None,
        };
        if let Some((class, title, mut evidence, remedy)) = found {
            evidence.push(view.fit.clone());
            out.push(Risk {
                class,
                pid: Some(pid),
                gpu: gpu.to_string(),
                level: Level::Suspected,
                confidence: None,
                title,
                evidence,
                remedy,
            });
        }
    }
    out
}

/// The line that keeps a leaking process's memory, in words ("keepers.py:11 remember (7.99 GiB,
/// 667 blocks)"): the site whose bytes climbed into its map at the OOM near `at_ms`, else into its
/// latest map; `None` without two maps that show one (allocation history not recorded).
pub fn leak_site(machine: &Machine, pid: u32, gpu: Option<&str>, at_ms: u64) -> Option<String> {
    fn pick<'a>(views: &'a [DeviceView], gpu: Option<&str>) -> Option<&'a SiteRow> {
        match gpu {
            Some(uuid) => crate::model::maps::view_for(views, uuid).and_then(climbing),
            None => views.first().and_then(climbing),
        }
    }
    let tracks = || machine.maps.iter().filter(|((p, _), _)| *p == pid);
    let at_oom = tracks()
        .filter_map(|(_, t)| t.at_oom.as_ref())
        .filter(|o| o.at_ms.abs_diff(at_ms) <= SAME_OOM_MS)
        .find_map(|o| pick(&o.views, gpu));
    at_oom
        .or_else(|| tracks().find_map(|(_, t)| pick(&t.views, gpu)))
        .map(site_words)
}

/// A leak warning's remedy, starting at the line its latest maps show climbing where they do.
pub fn with_site(machine: &Machine, pid: u32, gpu: &str, remedy: &str) -> String {
    let site = machine
        .maps
        .iter()
        .filter(|((p, _), _)| *p == pid)
        .find_map(|(_, t)| crate::model::maps::view_for(&t.views, gpu).and_then(climbing));
    let fw = machine
        .processes
        .values()
        .find(|t| t.sample.pid == pid)
        .and_then(|t| t.sample.framework.get());
    site.map_or_else(|| remedy.to_string(), |s| at_site(remedy, pid, s, fw))
}

/// A leak's remedy with the line that climbs first: the leak alert's own remedy after its first
/// sentence (what an allocator setting would buy, where it says).
fn at_site(remedy: &str, pid: u32, s: &SiteRow, fw: Option<crate::sample::Framework>) -> String {
    let first = crate::analysis::growth::leak_remedy_at(pid, Some(&site_words(s)), fw);
    match remedy.find(" An allocator setting will not help.") {
        Some(i) => format!(
            "{first}{}",
            &remedy[i + " An allocator setting will not help.".len()..]
        ),
        None => first,
    }
}

/// The site that grew most since the previous map (a new site counts with all its bytes).
fn climbing(view: &DeviceView) -> Option<&SiteRow> {
    view.sites
        .iter()
        .filter_map(|s| match s.change {
            SiteChange::By(b) if b > 0 => Some((b, s)),
            SiteChange::New => Some((i128::from(s.bytes), s)),
            _ => None,
        })
        .max_by_key(|(b, _)| *b)
        .map(|(_, s)| s)
}

/// The live, probed processes (pid, start time) with a leak or fragmentation alert whose risk
/// still shows at `at_ms`.
pub fn wanted(machine: &Machine, at_ms: u64) -> Vec<(u32, u64)> {
    let mut out: Vec<(u32, u64)> = Vec::new();
    for a in &machine.alerts {
        let (Some(pid), Some(gpu)) = (a.pid, a.gpu_uuid.as_deref()) else {
            continue;
        };
        if !MAP_CLASSES.contains(&a.class.as_str()) {
            continue;
        }
        let Some(g) = machine.gpu(gpu) else { continue };
        for t in crate::model::processes_on(&machine.processes, gpu) {
            let (Some(pool), Some(start)) = (t.sample.pool.value(), t.key.start_time) else {
                continue;
            };
            if t.sample.pid == pid
                && t.exited_ms.is_none()
                && !out.contains(&(pid, start))
                && super::pool::still_at_risk(t, pool, g, at_ms)
            {
                out.push((pid, start));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
