//! Slow leaks: a floor that climbs window after window while nothing is released, read from a
//! ring's coarse tiers at four window lengths (10 s, 1 min, 10 min, 1 h), so a leak of 150 MiB a
//! minute is certain in under two minutes and one of 20 MiB an hour in hours. What climbs is
//! a probed process's allocated memory (its cache never counts), or an unprobed process's device
//! memory from NVML. Warned whatever the distance to the limit, with the rate and the time to the
//! limit that binds first.
//!
//! A window's floor is the lowest reading in it, so in-step temporaries and periodic spikes
//! (evaluation, checkpointing) do not lift it. A trend is certain when, over the last windows
//! (at least `min_windows`, the process past its start-up):
//! - no floor is below the one before it (nothing released: an evaluation that frees what it
//!   took, a cache flush, a new epoch, each ends the run of windows);
//! - it rose by at least `MIN_RISE`, in at least two windows out of three, no one window's rise
//!   more than a third of the whole (a warm-up's or a model load's jump is not a trend);
//! - its last third rose at least three quarters as much as its first third (a cache filling
//!   up slows down as it fills; a leak does not).

pub use crate::model::history::Trend;
use crate::model::units::duration_ms;
use crate::model::{GpuTrack, Level, ProcessTrack, Ring, Tier};
use crate::oom::sizes::human;
use crate::sample::Pool;

use super::{LimitKind, binding, leak_remedy, limit_name};
use crate::analysis::risk::{Risk, figures};

/// One window length: tier, buckets per window, the fewest and most windows looked at.
struct Scale {
    tier: usize,
    group: u64,
    min_windows: usize,
    max_windows: usize,
}

const SCALES: [Scale; 4] = [
    Scale {
        tier: 0,
        group: 1,
        min_windows: 10,
        max_windows: 36,
    },
    Scale {
        tier: 1,
        group: 1,
        min_windows: 8,
        max_windows: 36,
    },
    Scale {
        tier: 1,
        group: 10,
        min_windows: 8,
        max_windows: 24,
    },
    Scale {
        tier: 1,
        group: 60,
        min_windows: 8,
        max_windows: 12,
    },
];

/// A climb smaller than this is noise, however regular.
const MIN_RISE: u64 = 16 << 20;
/// Windows that begin this soon after the process was first seen are its start-up (loading,
/// compiling, first steps): never part of a trend.
pub const SETTLE_MS: u64 = 30_000;

/// The floors of the complete windows of `group` buckets of `tier` that begin at or after
/// `since_ms`, at most `max` of them, oldest first (`None`: a window without a reading).
fn floors(tier: &Tier, group: u64, since_ms: u64, max: usize) -> Vec<Option<u64>> {
    let Some(newest) = tier.newest() else {
        return Vec::new();
    };
    let w = tier.bucket_ms() * group;
    // The window holding the newest bucket is still filling.
    let end = newest.at_ms - newest.at_ms % w;
    let from = end
        .saturating_sub(w.saturating_mul(max as u64))
        .max(since_ms.div_ceil(w).saturating_mul(w));
    let mut out: Vec<Option<u64>> = Vec::new();
    let mut current: Option<(u64, Option<u64>)> = None;
    for b in tier.since(from).take_while(|b| b.at_ms < end) {
        let start = b.at_ms - b.at_ms % w;
        match &mut current {
            Some((s, low)) if *s == start => {
                *low = match (*low, b.min) {
                    (Some(a), Some(m)) => Some(a.min(m)),
                    (a, m) => a.or(m),
                };
            }
            _ => {
                out.extend(current.map(|c| c.1));
                current = Some((start, b.min));
            }
        }
    }
    out.extend(current.map(|c| c.1));
    out
}

/// Whether the floors `ws` (all readings, none below the one before) make a certain trend.
fn certain(ws: &[u64], window_ms: u64) -> Option<Trend> {
    let n = ws.len();
    let (from, to) = (*ws.first()?, *ws.last()?);
    let rise = to.checked_sub(from).filter(|r| *r >= MIN_RISE)?;
    let steps: Vec<u64> = ws.windows(2).map(|p| p[1] - p[0]).collect();
    let rising = steps.iter().filter(|s| **s > 0).count();
    let largest = steps.iter().copied().max().unwrap_or(0);
    let third = n / 3;
    let early = ws[third] - ws[0];
    let late = ws[n - 1] - ws[n - 1 - third];
    if rising * 3 < steps.len() * 2 || largest.saturating_mul(3) > rise || late * 4 < early * 3 {
        return None;
    }
    // The rate of its later half: a leak that began inside the run is not averaged with the
    // flat time before it.
    let half = (n - 1) / 2;
    #[allow(clippy::cast_precision_loss)]
    let rate = (to - ws[half]) as f64 * 1000.0 / (window_ms * (n - 1 - half) as u64) as f64;
    if rate <= 0.0 {
        return None;
    }
    Some(Trend {
        from,
        to,
        windows: n,
        window_ms,
        rate,
    })
}

/// The longest certain trend that ends with the newest complete window of one scale.
fn at_scale(tier: &Tier, s: &Scale, since_ms: u64) -> Option<Trend> {
    let fl = floors(tier, s.group, since_ms, s.max_windows);
    // The run of windows, back from the newest, with a reading and nothing released.
    let mut start = fl.len();
    while let Some(Some(a)) = start.checked_sub(1).map(|i| fl[i]) {
        if fl.get(start).copied().flatten().is_some_and(|b| a > b) {
            break;
        }
        start -= 1;
    }
    let run: Vec<u64> = fl[start..].iter().flatten().copied().collect();
    let w = tier.bucket_ms() * s.group;
    (0..=run.len().saturating_sub(s.min_windows))
        .filter(|_| run.len() >= s.min_windows)
        .find_map(|k| certain(&run[k..], w))
}

/// The first scale, finest first, at which `ring` climbs for certain after `settled_ms`.
/// Found once per new coarse bucket (`Ring::trend_memo`), not every tick.
pub fn trend(ring: &Ring, settled_ms: u64) -> Option<Trend> {
    ring.trend_memo(settled_ms, || {
        SCALES
            .iter()
            .find_map(|s| at_scale(ring.tier(s.tier)?, s, settled_ms))
    })
}

/// A rate as a person says it: "150 MiB/min", "20 MiB/h", "1.2 GiB/min".
pub fn per_time(bytes_per_s: f64) -> String {
    const MIB: f64 = 1_048_576.0;
    let (per, unit) = if bytes_per_s * 60.0 >= MIB {
        (bytes_per_s * 60.0, "min")
    } else {
        (bytes_per_s * 3600.0, "h")
    };
    let amount = if per >= 1024.0 * MIB {
        format!("{:.1} GiB", per / 1024.0 / MIB)
    } else if per >= 10.0 * MIB {
        format!("{:.0} MiB", per / MIB)
    } else if per >= MIB {
        format!("{:.1} MiB", per / MIB)
    } else {
        format!("{:.0} KiB", per / 1024.0)
    };
    format!("{amount}/{unit}")
}

#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]
fn eta_ms(headroom: u64, rate: f64) -> u64 {
    (headroom as f64 / rate * 1000.0) as u64
}

fn evidence(what: &str, tr: &Trend, limit: &str, headroom: u64, eta: u64) -> Vec<String> {
    vec![
        format!(
            "the floor of its {what} (the lowest reading of each {} window) rose from {} to {} over {} windows ({}), never lower than the window before: nothing released",
            duration_ms(tr.window_ms),
            human(tr.from),
            human(tr.to),
            tr.windows,
            duration_ms(tr.span_ms())
        ),
        format!(
            "the limit that binds first: {limit}, {} left",
            human(headroom)
        ),
        format!(
            "at {} it is reached in about {}",
            per_time(tr.rate),
            duration_ms(eta)
        ),
    ]
}

/// A probed process's slow leak: its allocated memory's floor climbs for certain. Its steps
/// need room above that floor, what its pool caches between them (or more, where the probe's
/// peak says so): the limit is reached when the floor is that far below it, not at it. (A pool
/// that keeps cache its steps no longer use makes the time stated shorter than it will be.)
pub fn probed(t: &ProcessTrack, pool: &Pool, g: &GpuTrack) -> Option<Risk> {
    let h = t.pool_history.as_ref()?;
    let tr = trend(&h.allocated, t.first_seen_ms.saturating_add(SETTLE_MS))?;
    let limit = binding(pool, g)?;
    let peak = pool
        .peak_allocated
        .zip(pool.allocated)
        .map_or(0, |(p, a)| p.saturating_sub(a));
    let in_step = peak.max(pool.releasable().unwrap_or(0));
    let headroom = limit.headroom.saturating_sub(in_step);
    let eta = eta_ms(headroom, tr.rate);
    let fw = pool.framework;
    let name = limit_name(&limit, fw, g);
    let pid = t.sample.pid;
    let reach = match limit.kind {
        LimitKind::Own => format!("reaches {name} in about {}", duration_ms(eta)),
        LimitKind::Gpu => format!("GPU{} full in about {}", g.sample.index, duration_ms(eta)),
    };
    let mut ev = evidence("allocated memory", &tr, &name, limit.headroom, eta);
    if in_step > 0 {
        ev.insert(
            2,
            format!(
                "its steps use up to {} above what stays allocated (its pool's cache between steps, or the probe's peak), so {} of it is left to the leak",
                human(in_step),
                human(headroom)
            ),
        );
    }
    ev.extend(figures(pool));
    Some(Risk {
        class: "leak",
        pid: Some(pid),
        gpu: t.sample.gpu_uuid.clone(),
        level: Level::Suspected,
        confidence: None,
        title: format!(
            "pid {pid} {} leaks {}: {reach}",
            fw.label(),
            per_time(tr.rate)
        ),
        evidence: ev,
        remedy: leak_remedy(pid, t.sample.framework.get()),
    })
}

/// An unprobed process's slow leak: its device memory's floor climbs for certain, towards its
/// GPU's free memory (all it can see: without the probe, cache and live memory are one figure).
pub fn unprobed(t: &ProcessTrack, g: &GpuTrack) -> Option<Risk> {
    if t.exited_ms.is_some() {
        return None;
    }
    let tr = trend(&t.history, t.first_seen_ms.saturating_add(SETTLE_MS))?;
    let free = g.sample.memory.value()?.free;
    let eta = eta_ms(free, tr.rate);
    let pid = t.sample.pid;
    let gpu = format!("GPU{}'s free memory", g.sample.index);
    let mut ev = evidence("device memory", &tr, &gpu, free, eta);
    ev.push("device memory from NVML: without the allocator probe, memory in use and cache kept for reuse are one figure".into());
    Some(Risk {
        class: "leak",
        pid: Some(pid),
        gpu: t.sample.gpu_uuid.clone(),
        level: Level::Suspected,
        confidence: None,
        title: format!(
            "pid {pid} leaks {} of device memory (no probe): GPU{} full in about {}",
            per_time(tr.rate),
            g.sample.index,
            duration_ms(eta)
        ),
        evidence: ev,
        remedy: leak_remedy(pid, t.sample.framework.get()),
    })
}

#[cfg(test)]
mod tests;
