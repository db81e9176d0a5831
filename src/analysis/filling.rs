//! A GPU filling up for good: its used memory less the cache its probed processes could release
//! (their allocators release it before failing; a JAX or TensorFlow pool never does), each
//! reading the floor of the last seconds so mid-step temporaries are not growth, projected to the
//! GPU's free memory.

use crate::model::units::{duration_ms, rate};
use crate::model::{GpuTrack, Machine, PoolHistory, Ring, processes_on};
use crate::oom::sizes::human;

use super::growth::unreleasable;
use super::risk::{Finding, IsNew};

/// A process's first seconds on a GPU (its context, its model loaded, its first steps' working
/// set) are its start, not growth: the GPU's series counts from this long after the youngest
/// running process on it was first seen (on 2 H100s a healthy FSDP job's start read as "full in
/// about 9m").
const STARTUP_MS: u64 = 10_000;
/// Warn when the GPU would be full sooner than this.
const FULL_WITHIN_MS: u64 = 10 * 60_000;
/// Growth must have lasted this long to count as sustained.
const SUSTAINED_MS: u64 = 30_000;
/// The window of a series' floor.
const FLOOR_MS: u64 = 5_000;
/// A probed process's figures older than this say nothing of the GPU at a later reading.
const FRESH_MS: u64 = 5_000;

/// A probed process's releasable cache at `at_ms` (0 when its figures are not that recent).
fn releasable_at(t: &PoolHistory, at_ms: u64) -> u64 {
    let v = |r: &Ring| {
        r.last_at_or_before(at_ms)
            .filter(|p| at_ms.saturating_sub(p.at_ms) <= FRESH_MS)
            .and_then(|p| p.value)
    };
    match (v(&t.reserved), v(&t.allocated)) {
        (Some(r), Some(a)) => r
            .saturating_sub(a)
            .saturating_sub(v(&t.stranded).unwrap_or(0)),
        _ => 0,
    }
}

/// The GPU's used memory over the last minute, less the cache its probed processes could
/// release: what fills the GPU for good.
fn committed(machine: &Machine, g: &GpuTrack, last: u64) -> Vec<(u64, u64)> {
    // A BFC pool (JAX, TensorFlow) never gives its free part back: it stays committed.
    let probed: Vec<&PoolHistory> = processes_on(&machine.processes, &g.sample.uuid)
        .filter(|t| {
            t.sample
                .pool
                .value()
                .is_none_or(|p| !p.framework.keeps_its_pool())
        })
        .filter_map(|t| t.pool_history.as_ref())
        .collect();
    g.used
        .iter()
        .filter(|p| last.saturating_sub(p.at_ms) <= 60_000)
        .filter_map(|p| {
            let cache = probed
                .iter()
                .fold(0u64, |sum, t| sum.saturating_add(releasable_at(t, p.at_ms)));
            Some((p.at_ms, p.value?.saturating_sub(cache)))
        })
        .collect::<Vec<_>>()
        .floors()
}

/// A series' floor: each point the lowest of the readings within `FLOOR_MS` before it, so the
/// temporaries a probed job holds mid-step (read at any moment of it) are not taken for growth.
trait Floors {
    fn floors(self) -> Vec<(u64, u64)>;
}

impl Floors for Vec<(u64, u64)> {
    fn floors(self) -> Vec<(u64, u64)> {
        self.iter()
            .enumerate()
            .map(|(i, &(at, _))| {
                let low = self[..=i]
                    .iter()
                    .rev()
                    .take_while(|p| at.saturating_sub(p.0) <= FLOOR_MS)
                    .map(|p| p.1)
                    .min()
                    .unwrap_or(0);
                (at, low)
            })
            .collect()
    }
}

/// Bytes per second from the first point at most `window_ms` before the last to the last.
fn rate_over(series: &[(u64, u64)], window_ms: u64) -> Option<f64> {
    let &(t1, v1) = series.last()?;
    let &(t0, v0) = series
        .iter()
        .find(|p| t1.saturating_sub(p.0) <= window_ms)?;
    let dt = t1.checked_sub(t0).filter(|d| *d >= 1000)?;
    #[allow(clippy::cast_precision_loss)]
    Some((v1 as f64 - v0 as f64) * 1000.0 / dt as f64)
}

pub fn time_to_full(machine: &Machine, g: &GpuTrack, is_new: IsNew) -> Option<Finding> {
    let free = g.sample.memory.value()?.free;
    let last = g.used.last()?.at_ms;
    let started = processes_on(&machine.processes, &g.sample.uuid)
        .filter(|t| t.exited_ms.is_none())
        .map(|t| t.first_seen_ms.saturating_add(STARTUP_MS))
        .max()
        .unwrap_or(0);
    let mut series = committed(machine, g, last);
    series.retain(|p| p.0 >= started);
    let oldest = series.first()?.0;
    if last.saturating_sub(oldest) < SUSTAINED_MS {
        return None;
    }
    let per_s = rate_over(&series, 60_000)?;
    let recent = rate_over(&series, SUSTAINED_MS / 2)?;
    if per_s <= 0.0 || recent <= 0.0 || !steady(&series) {
        return None;
    }
    // The cache the probed processes hold now is room too: they release it before failing.
    let cache = g
        .used
        .last()
        .and_then(|p| p.value)
        .zip(series.last())
        .map_or(0, |(used, c)| used.saturating_sub(c.1));
    let room = free.saturating_add(cache);
    // Every process on it capped (its own limit from the probe): together they can take no more
    // than their caps leave them, and if that is less than the room, the GPU cannot fill.
    let capped_room = processes_on(&machine.processes, &g.sample.uuid)
        .filter(|t| t.exited_ms.is_none())
        .try_fold(0u64, |sum, t| {
            let pool = t.sample.pool.value()?;
            let cap = pool.limit.filter(|l| *l > 0)?;
            Some(sum.saturating_add(cap.saturating_sub(unreleasable(pool)?)))
        });
    if capped_room.is_some_and(|c| c < room) {
        return None;
    }
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let eta_ms = (room as f64 / per_s * 1000.0) as u64;
    if eta_ms >= FULL_WITHIN_MS || !is_new() {
        return None;
    }
    let fastest = machine
        .processes
        .values()
        .filter(|t| t.sample.gpu_uuid == g.sample.uuid && t.exited_ms.is_none())
        .filter_map(|t| Some((t, t.growth.filter(|r| *r > 0.0)?)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let remedy = fastest.map_or_else(
        || "Find what is filling the GPU before it is full.".to_string(),
        |(t, r)| {
            format!(
                "pid {} grows fastest ({}): check it before the GPU is full.",
                t.sample.pid,
                rate(r)
            )
        },
    );
    Some((
        if eta_ms < 1000 {
            format!("GPU{} nearly full and still growing", g.sample.index)
        } else {
            format!(
                "GPU{} full in about {} at the current growth",
                g.sample.index,
                duration_ms(eta_ms)
            )
        },
        vec![
            format!(
                "used memory that cannot be released grew {} over the last minute",
                rate(per_s)
            ),
            format!("{} free", human(free)),
            "a probed process's cache does not count: its allocator releases it before failing"
                .into(),
        ],
        Some(remedy),
    ))
}

/// Whether the growth in `series` is a trend rather than one jump (a pool grabbed at start, a
/// burst of allocations): no single step is more than half of the whole increase.
fn steady(series: &[(u64, u64)]) -> bool {
    let mut readings = series.iter().map(|p| p.1);
    let Some(first) = readings.next() else {
        return false;
    };
    let (mut prev, mut largest) = (first, 0u64);
    for v in readings {
        largest = largest.max(v.saturating_sub(prev));
        prev = v;
    }
    let total = prev.saturating_sub(first);
    total > 0 && largest.saturating_mul(2) <= total
}
