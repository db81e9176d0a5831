//! Growth of what a probed process cannot release (its allocated plus stranded bytes; cache it
//! could give back never counts), projected to the limit that binds first: its own cap or pool
//! limit, or what its GPU can still give it. Leak first: allocated's own floor climbing with
//! nothing released (`floor.rs`, read through the noise of busy steps) is a leak whatever grows
//! with it, the fragmentation its kept blocks cause named second with the time expandable
//! segments would buy at its rate; a climb whose stranded share of the pool grows while
//! allocated does not is a fragmentation that builds.

use crate::model::units::{duration_ms, rate};
use crate::model::{GpuTrack, Level, PoolHistory, ProcessTrack, Ring};
use crate::oom::sizes::human;
use crate::sample::{Framework, Pool};

use super::risk::{Risk, context, figures};

pub mod floor;
pub mod second;
pub mod slow;

pub use super::remedy::{find_what_keeps, leak_remedy, leak_remedy_at};

/// The windows a climb is looked for in, longest first: a long climb is the stronger evidence,
/// a short one warns early.
const WINDOWS_MS: [u64; 3] = [60_000, 30_000, 12_000];
/// A climb spans at least this long, in at least this many readings.
const MIN_SPAN_MS: u64 = 10_000;
const MIN_READINGS: usize = 6;
const MIN_INCREASES: usize = 3;
/// A climb smaller than this (or than `MIN_RISE_PERMILLE` of the limit) is noise.
const MIN_RISE: u64 = 256 << 20;
const MIN_RISE_PERMILLE: u64 = 30;
/// Warn when the limit would be reached sooner than this.
pub const HORIZON_MS: u64 = 10 * 60_000;
/// Stranded bytes that make a growing pool's failure a fragmentation: this much, and this share
/// of the pool (per mille).
const STRANDED: u64 = 512 << 20;
const STRANDED_PERMILLE: u64 = 100;

/// Which limit binds a process's growth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKind {
    /// Its own cap or pool limit (PyTorch's per-process fraction, JAX's `bytes_limit`, CuPy's).
    Own,
    /// What its GPU has free, plus the cache it can allocate from again.
    Gpu,
}

/// The limit that binds first, and how far away it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub kind: LimitKind,
    /// What the process's unreleasable memory may reach.
    pub total: u64,
    /// What is left of it.
    pub headroom: u64,
}

/// Allocated plus stranded: what the process cannot give back.
pub fn unreleasable(pool: &Pool) -> Option<u64> {
    Some(pool.allocated?.saturating_add(pool.stranded.unwrap_or(0)))
}

/// The limit that binds first for `pool` on `g`.
pub fn binding(pool: &Pool, g: &GpuTrack) -> Option<Limit> {
    let held = unreleasable(pool)?;
    let own = pool.limit.filter(|l| *l > 0).map(|l| Limit {
        kind: LimitKind::Own,
        total: l,
        headroom: l.saturating_sub(held),
    });
    let gpu = g.sample.memory.value().map(|m| {
        let room = m.free.saturating_add(pool.reusable().unwrap_or(0));
        Limit {
            kind: LimitKind::Gpu,
            total: held.saturating_add(room),
            headroom: room,
        }
    });
    match (own, gpu) {
        (Some(o), Some(g)) => Some(if g.headroom < o.headroom { g } else { o }),
        (o, g) => o.or(g),
    }
}

/// A climb of unreleasable memory with nothing released on the way.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Climb {
    pub span_ms: u64,
    pub from: u64,
    pub to: u64,
    /// Bytes per second.
    pub rate: f64,
}

/// Allocated plus stranded at each reading of the pool's history from `from_ms` on (stranded
/// counts 0 where the framework has no such figure). The rings are pushed together, so they
/// pair up reading by reading.
fn unreleasable_series(track: &PoolHistory, from_ms: u64) -> Vec<(u64, u64)> {
    track
        .allocated
        .iter()
        .zip(track.stranded.iter())
        .filter(|(p, _)| p.at_ms >= from_ms)
        .filter_map(|(p, s)| Some((p.at_ms, p.value?.saturating_add(s.value.unwrap_or(0)))))
        .collect()
}

fn median(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

/// Whether `points` (in time order) climb with nothing released: every reading of the last third
/// above every reading of the first, the middle third no lower than the first.
pub(super) fn climbs(points: &[(u64, u64)]) -> Option<Climb> {
    climbs_over(points, MIN_SPAN_MS)
}

/// `climbs` with its own shortest span.
pub(super) fn climbs_over(points: &[(u64, u64)], min_span_ms: u64) -> Option<Climb> {
    let n = points.len();
    let span_ms = points.last()?.0.saturating_sub(points.first()?.0);
    if n < MIN_READINGS || span_ms < min_span_ms {
        return None;
    }
    let k = n / 3;
    let (first, rest) = points.split_at(k);
    let (middle, last) = rest.split_at(rest.len() - k);
    let top_first = first.iter().map(|p| p.1).max()?;
    let low_middle = middle.iter().map(|p| p.1).min()?;
    let low_last = last.iter().map(|p| p.1).min()?;
    if low_last <= top_first || low_middle < top_first {
        return None;
    }
    let from = median(&mut first.iter().map(|p| p.1).collect::<Vec<_>>());
    let to = median(&mut last.iter().map(|p| p.1).collect::<Vec<_>>());
    // A climb, not one jump (a model loaded, a compiled graph's buffers): several increases,
    // none more than half of the rise.
    let steps: Vec<u64> = points
        .windows(2)
        .map(|w| w[1].1.saturating_sub(w[0].1))
        .filter(|d| *d > 0)
        .collect();
    let largest = steps.iter().copied().max().unwrap_or(0);
    if steps.len() < MIN_INCREASES || largest.saturating_mul(2) > to.saturating_sub(from) {
        return None;
    }
    let mid_time = |ps: &[(u64, u64)]| ps[ps.len() / 2].0;
    let dt = mid_time(last).saturating_sub(mid_time(first));
    if dt < 1000 {
        return None;
    }
    #[allow(clippy::cast_precision_loss)]
    let rate = (to - from) as f64 * 1000.0 / dt as f64;
    Some(Climb {
        span_ms,
        from,
        to,
        rate,
    })
}

/// The longest of the windows in which the process's unreleasable memory climbs, up to `now_ms`.
pub fn climb(track: &PoolHistory, now_ms: u64) -> Option<Climb> {
    let series = unreleasable_series(track, now_ms.saturating_sub(WINDOWS_MS[0]));
    climb_in(&series, now_ms)
}

/// The longest of the windows in which `series` (time, bytes; in time order) climbs with
/// nothing released, up to `now_ms`.
pub fn climb_in(series: &[(u64, u64)], now_ms: u64) -> Option<Climb> {
    let series = &series[..series.partition_point(|p| p.0 <= now_ms)];
    WINDOWS_MS.iter().find_map(|w| {
        let from = series.partition_point(|p| now_ms.saturating_sub(p.0) > *w);
        climbs(&series[from..])
    })
}

/// A climb large enough to matter against `limit`, and the time left at its rate.
fn eta(c: &Climb, limit: &Limit) -> Option<u64> {
    let rise = c.to.saturating_sub(c.from);
    if rise < MIN_RISE.max(limit.total / 1000 * MIN_RISE_PERMILLE) || c.rate <= 0.0 {
        return None;
    }
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let ms = (limit.headroom as f64 / c.rate * 1000.0) as u64;
    (ms < HORIZON_MS).then_some(ms)
}

/// Whether the pool's stranded share is large and grew during the climb: its failure would be a
/// fragmentation, not a leak. Under expandable segments nothing is counted as split: the pool's
/// free part (reserved − allocated), kept while the pool grew, is what its requests did not fit.
fn fragmenting(
    track: &PoolHistory,
    pool: &Pool,
    c: &Climb,
    now_ms: u64,
    expandable: bool,
) -> Option<u64> {
    let reserved = pool.reserved?;
    let since = now_ms.saturating_sub(c.span_ms);
    let (stranded, before) = if expandable {
        (pool.cached_free?, cached_free_at(track, since)?)
    } else {
        (pool.stranded?, at_or_after(&track.stranded, since)?)
    };
    let grew = stranded >= before.saturating_add(STRANDED / 4);
    (stranded >= STRANDED.max(reserved / 1000 * STRANDED_PERMILLE) && grew).then_some(stranded)
}

fn at_or_after(ring: &Ring, at_ms: u64) -> Option<u64> {
    ring.iter().find(|p| p.at_ms >= at_ms).and_then(|p| p.value)
}

/// The pool's free part (reserved − allocated) at the first reading from `at_ms` on.
fn cached_free_at(track: &PoolHistory, at_ms: u64) -> Option<u64> {
    let reserved = at_or_after(&track.reserved, at_ms)?;
    Some(reserved.saturating_sub(at_or_after(&track.allocated, at_ms)?))
}

/// How the limit reads in a sentence: "its 9.50 GiB cap", "GPU0's free memory".
pub fn limit_name(limit: &Limit, framework: Framework, g: &GpuTrack) -> String {
    match limit.kind {
        LimitKind::Own => {
            let what = match framework {
                Framework::Pytorch => "cap (per-process memory fraction)",
                Framework::Jax => "pool limit (XLA bytes_limit)",
                Framework::Cupy => "pool limit (set_limit)",
                _ => "pool limit",
            };
            format!("its {} {what}", human(limit.total))
        }
        LimitKind::Gpu => format!("GPU{}'s free memory", g.sample.index),
    }
}

/// The climb's evidence lines.
fn evidence(c: &Climb, limit: &Limit, name: &str, eta_ms: u64) -> Vec<String> {
    vec![
        format!(
            "allocated + stranded memory rose from {} to {} over {} ({}), nothing released in between",
            human(c.from),
            human(c.to),
            duration_ms(c.span_ms),
            rate(c.rate)
        ),
        format!(
            "the limit that binds first: {name}, {} left",
            human(limit.headroom)
        ),
        format!(
            "at this rate it is reached in about {}",
            duration_ms(eta_ms)
        ),
    ]
}

/// Whether a probed process's own growth is filling its GPU: it climbs, and the GPU's free
/// memory is the limit it reaches first, soon. Its `leak` or `fragmentation-risk` then names the
/// GPU and who fills it, so a GPU-wide warning would say the same again.
pub fn fills_gpu(t: &ProcessTrack, pool: &Pool, g: &GpuTrack, now_ms: u64) -> bool {
    let (Some(track), Some(limit)) = (t.pool_history.as_ref(), binding(pool, g)) else {
        return false;
    };
    limit.kind == LimitKind::Gpu && climb(track, now_ms).is_some_and(|c| eta(&c, &limit).is_some())
}

/// Whether allocated's own floor climbs into `now_ms` by enough to matter (a leak, warned or
/// not yet): no fragmentation or growing-peak warning goes before the leak's.
pub fn floor_climbs(t: &ProcessTrack, pool: &Pool, g: &GpuTrack, now_ms: u64) -> bool {
    let (Some(track), Some(limit)) = (t.pool_history.as_ref(), binding(pool, g)) else {
        return false;
    };
    floor::leak(track, pool, &limit, now_ms).is_some()
}

/// The growth risk of a probed, live process: a leak (its allocated floor climbing, seen fast in
/// a busy loop, or its unreleasable memory climbing with no stranded share growing), else a
/// fragmentation that builds.
pub fn risk(t: &ProcessTrack, pool: &Pool, g: &GpuTrack, now_ms: u64) -> Option<Risk> {
    let track = t.pool_history.as_ref()?;
    let limit = binding(pool, g)?;
    let ctx = context(t);
    let expandable = super::remedy::expandable(&ctx);
    let floor = floor::leak(track, pool, &limit, now_ms);
    let c = climb(track, now_ms).and_then(|c| Some((c, eta(&c, &limit)?)));
    let pid = t.sample.pid;
    let fw = pool.framework;
    let name = limit_name(&limit, fw, g);
    let built = c.and_then(|(c, _)| fragmenting(track, pool, &c, now_ms, expandable));
    let (rate, eta_ms, mut ev) = match (floor, c) {
        // Leak first: the floor of allocated itself climbs.
        (Some(f), _) if f.warns(HORIZON_MS) => (f.climb.rate, f.eta_ms, f.evidence(&name)),
        (Some(f), Some((c, eta_ms))) => (f.climb.rate, eta_ms, evidence(&c, &limit, &name, eta_ms)),
        (None, Some((c, eta_ms))) if built.is_none() => {
            (c.rate, eta_ms, evidence(&c, &limit, &name, eta_ms))
        }
        (None, Some((c, eta_ms))) => {
            let stranded = built.unwrap_or(0);
            let mut ev = evidence(&c, &limit, &name, eta_ms);
            ev.extend(figures(pool));
            if expandable {
                ev.push("under expandable_segments:True PyTorch counts no inactive split bytes: the pool's free part (reserved − allocated), which grew as the pool did, is what its requests did not fit in".into());
            }
            let title = format!(
                "pid {pid} {} pool fragmenting as it grows: {} {}, reaches {name} in about {}",
                fw.label(),
                human(stranded),
                if expandable {
                    "free between its live blocks (expandable segments)"
                } else {
                    "stranded"
                },
                duration_ms(eta_ms)
            );
            let remedy = super::remedy::defragment(super::remedy::dialect_of(fw), &ctx);
            return Some(suspected(t, "fragmentation-risk", title, ev, remedy));
        }
        _ => return None,
    };
    // The fragmentation the kept blocks cause, second.
    let second = second::fragments(pool, expandable, rate);
    ev.extend(second.as_ref().map(|s| s.evidence.clone()));
    ev.extend(figures(pool));
    let title = format!(
        "pid {pid} {} leaks {}: reaches {name} in about {}{}",
        fw.label(),
        crate::model::units::rate(rate),
        duration_ms(eta_ms),
        second
            .as_ref()
            .map_or_else(String::new, |s| format!("; {}", s.title))
    );
    let mut remedy = leak_remedy(pid, t.sample.framework.get());
    if let Some(s) = &second {
        remedy = format!("{remedy} {}", s.remedy);
    }
    Some(suspected(t, "leak", title, ev, remedy))
}

fn suspected(
    t: &ProcessTrack,
    class: &'static str,
    title: String,
    evidence: Vec<String>,
    remedy: String,
) -> Risk {
    Risk {
        class,
        pid: Some(t.sample.pid),
        gpu: t.sample.gpu_uuid.clone(),
        level: Level::Suspected,
        confidence: None,
        title,
        evidence,
        remedy,
    }
}

#[cfg(test)]
mod tests;
