//! One map file (`<pid>.map.json`, `gpumon.map/1`): parsed and checked into a [`PoolMap`], or the
//! reason it is not to be trusted. Pure: the checks that need the file system live in `maps.rs`.

use crate::sample::PoolMap;
use crate::sample::pool_map::MapReason;
use crate::sample::request::{Purpose, purpose_of};

/// The version of the format this gpumon reads.
pub const SCHEMA: &str = "gpumon.map/1";
/// A larger file is not a map.
pub const MAX_BYTES: u64 = 1 << 20;
/// Runs a probe writes at most (it sums the rest into `elided`); a map with more than twice
/// this is refused.
pub const PROBE_RUNS: usize = 2048;
const MAX_RUNS: usize = 2 * PROBE_RUNS;
/// Sites a probe writes at most, and stranding sites: more are cut.
const MAX_SITES: usize = 20;
const MAX_STRANDING: usize = 5;
const MAX_SHAPES: usize = 20;
const MAX_DEVICES: usize = 64;

/// Parses a map file named for `pid`; the error is a reason for a person.
pub fn parse(bytes: &[u8], pid: u32) -> Result<PoolMap, String> {
    let mut map: PoolMap = super::file::document(bytes, SCHEMA, MAX_BYTES)?;
    if map.pid != pid {
        return Err(format!(
            "describes pid {} but is named for pid {pid}",
            map.pid
        ));
    }
    // The probe cannot tell why gpumon asked: the request's id says it (sample::request).
    if map.reason == MapReason::Request
        && map
            .request_id
            .is_some_and(|id| purpose_of(id) == Purpose::Alert)
    {
        map.reason = MapReason::Alert;
    }
    let devices: Vec<_> = map
        .frameworks
        .iter_mut()
        .flat_map(|f| f.devices.iter_mut())
        .collect();
    if devices.len() > MAX_DEVICES {
        return Err(format!(
            "{} devices: more than any machine has",
            devices.len()
        ));
    }
    let mut runs = 0usize;
    for d in devices {
        d.uuid = d.uuid.take().filter(|u| super::file::valid_uuid(u));
        runs += d
            .segments
            .iter()
            .flatten()
            .map(|s| s.runs.len())
            .sum::<usize>();
        for (list, max) in [
            (&mut d.sites, MAX_SITES),
            (&mut d.stranding_sites, MAX_STRANDING),
        ] {
            if let Some(sites) = list {
                sites.truncate(max);
            }
        }
        if let Some(shapes) = &mut d.shapes {
            shapes.truncate(MAX_SHAPES);
        }
    }
    if runs > MAX_RUNS {
        return Err(format!(
            "{runs} runs of blocks: a probe writes at most {PROBE_RUNS}"
        ));
    }
    Ok(map)
}

#[cfg(test)]
mod tests;
