//! A peak that grows: each step needs more than the last (a batch-size or sequence-length
//! schedule), while what stays allocated between steps is flat. Seen in the probe's peak of
//! allocated memory (each reading the highest of the last seconds, so a job that resets its peak
//! every step still shows each step's whole peak), or, where the probe reads only between steps,
//! in the allocator's cache flushes: a flush empties the cache, so what the pool holds right after
//! it is what a step took again, and a pool that holds more after each flush than after the last
//! is a need that grows. Projected to the limit a step must fit under (its own cap, else its pool
//! plus what the GPU has free), and warned when, at its rate, that limit is nearer than the climb
//! is old, or when the allocator already flushes its cache again and again to fit the steps. The
//! pool's high-water mark alone is never taken for a need: a caching pool grows until its cap or
//! the GPU is full and then flushes, healthy.

use crate::analysis::growth::{Climb, Limit, LimitKind, climbs, limit_name};
use crate::analysis::remedy::{dialect_of, raise_limit};
use crate::analysis::risk::{Risk, context, figures};
use crate::model::units::{duration_ms, rate};
use crate::model::{GpuTrack, Level, PoolHistory, ProcessTrack, Ring};
use crate::oom::sizes::human;
use crate::sample::Pool;

/// Each reading of the peak is the highest, and each of allocated the lowest, within this long
/// before it: the top of the last steps, and what stays between them.
const STEP_MS: u64 = 5_000;
/// The windows a climb is looked for in, longest first (the longer, the stronger the evidence).
const WINDOWS_MS: [u64; 5] = [300_000, 120_000, 60_000, 30_000, 15_000];
/// A rise smaller than this (or than `MIN_RISE_PERMILLE` of the limit) is noise.
const MIN_RISE: u64 = 256 << 20;
const MIN_RISE_PERMILLE: u64 = 30;
/// What stays allocated between steps may rise by at most this share of the peak's rise (more is
/// memory kept: the leak rule's).
const FLAT_SHARE: u64 = 4;
/// The peak must have risen within this long.
const RISING_MS: u64 = 10_000;
/// Never warn of a limit further away than this.
const HORIZON_MS: u64 = 10 * 60_000;
/// Cache flushes in this window that say the steps fit only by flushing.
const FLUSH_WINDOW_MS: u64 = 30_000;
const FLUSHES: usize = 3;
/// Flushes this recent are compared with each other.
const FLUSHES_WITHIN_MS: u64 = 60_000;

/// `series`' readings from `from_ms` on, each the `pick` (max or min) of those within `STEP_MS`
/// before it.
fn over_steps(series: &[(u64, u64)], from_ms: u64, pick: fn(u64, u64) -> u64) -> Vec<(u64, u64)> {
    let start = series.partition_point(|p| p.0.saturating_add(STEP_MS) < from_ms);
    let raw = &series[start..];
    raw.iter()
        .enumerate()
        .filter(|(_, p)| p.0 >= from_ms)
        .map(|(i, &(at, v))| {
            let v = raw[..i]
                .iter()
                .rev()
                .take_while(|p| at.saturating_sub(p.0) <= STEP_MS)
                .fold(v, |acc, p| pick(acc, p.1));
            (at, v)
        })
        .collect()
}

fn readings(ring: &Ring) -> Vec<(u64, u64)> {
    ring.iter()
        .filter_map(|p| Some((p.at_ms, p.value?)))
        .collect()
}

/// What showed the steps' need climbing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    /// The framework's peak of allocated memory.
    Peak,
    /// What the pool held right after each of this many cache flushes: a flush empties the
    /// cache, so what the pool takes again is what the step needs.
    Flushes(usize),
}

/// A need that climbs over flat allocated: the climb, since when, the need now, what stays
/// allocated between steps now, and what showed it.
struct Growing {
    climb: Climb,
    since_ms: u64,
    need: u64,
    floor: u64,
    seen: Seen,
}

/// Whether what stays allocated between steps from `from_ms` on rose by at most `FLAT_SHARE` of
/// `rise`; its lowest of the last seconds now.
fn flat_floor(h: &PoolHistory, from_ms: u64, rise: u64) -> Option<u64> {
    let floors = over_steps(&readings(&h.allocated), from_ms, u64::min);
    let (first, last) = (floors.first()?.1, floors.last()?.1);
    (last.saturating_sub(first).saturating_mul(FLAT_SHARE) <= rise).then_some(last)
}

/// The framework's peak climbing, still rising in the last `RISING_MS`.
fn peak_climbs(h: &PoolHistory, now_ms: u64) -> Option<Growing> {
    let peaks = readings(&h.peak);
    WINDOWS_MS.iter().find_map(|w| {
        let from = now_ms.saturating_sub(*w);
        let ceilings = over_steps(&peaks, from, u64::max);
        let c = climbs(&ceilings)?;
        let floor = flat_floor(h, from, c.to.saturating_sub(c.from))?;
        // Still climbing: above where it stood `RISING_MS` ago (a warm-up that stopped, or a
        // running peak that last rose long ago, is not warned).
        let now = ceilings.last()?;
        let before = ceilings
            .iter()
            .rev()
            .find(|p| now.0.saturating_sub(p.0) >= RISING_MS)?;
        if now.1 <= before.1 {
            return None;
        }
        Some(Growing {
            climb: c,
            since_ms: ceilings.iter().rev().find(|p| p.1 <= c.from)?.0,
            need: now.1,
            floor,
            seen: Seen::Peak,
        })
    })
}

/// Cache flushes that repeat, the pool holding more right after each than after the one before:
/// each step needs more than the last, and fits only by emptying the cache.
fn flushes_climb(h: &PoolHistory, now_ms: u64) -> Option<Growing> {
    let after: Vec<(u64, u64)> = h
        .retries_at
        .iter()
        .filter(|t| now_ms.saturating_sub(**t) <= FLUSHES_WITHIN_MS)
        .filter_map(|t| Some((*t, h.reserved.last_at_or_before(*t)?.value?)))
        .collect();
    let (first, last) = (after.first()?, after.last()?);
    if after.len() < 2 || after.windows(2).any(|w| w[1].1 < w[0].1) {
        return None;
    }
    let dt = last.0.checked_sub(first.0).filter(|d| *d >= 1000)?;
    let rise = last.1.saturating_sub(first.1);
    let floor = flat_floor(h, first.0.saturating_sub(STEP_MS), rise)?;
    #[allow(clippy::cast_precision_loss)]
    let rate = rise as f64 * 1000.0 / dt as f64;
    Some(Growing {
        climb: Climb {
            span_ms: dt,
            from: first.1,
            to: last.1,
            rate,
        },
        since_ms: first.0,
        need: last.1,
        floor,
        seen: Seen::Flushes(after.len()),
    })
}

/// The limit a step's peak must fit under: its own cap, else its pool plus the GPU's free memory.
fn limit(pool: &Pool, g: &GpuTrack, peak: u64) -> Option<Limit> {
    let own = pool.limit.filter(|l| *l > 0).map(|l| (LimitKind::Own, l));
    let gpu = g
        .sample
        .memory
        .value()
        .zip(pool.reserved)
        .map(|(m, r)| (LimitKind::Gpu, r.max(peak).saturating_add(m.free)));
    let (kind, total) = match (own, gpu) {
        (Some(o), Some(g)) => {
            if g.1 < o.1 {
                g
            } else {
                o
            }
        }
        (o, g) => o.or(g)?,
    };
    Some(Limit {
        kind,
        total,
        headroom: total.saturating_sub(peak),
    })
}

#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]
fn eta_ms(headroom: u64, per_s: f64) -> u64 {
    (headroom as f64 / per_s * 1000.0) as u64
}

/// The climb in words: what showed it, from what to what, while allocated stayed flat.
fn describe(gr: &Growing, now_ms: u64) -> String {
    let c = &gr.climb;
    let climbing = duration_ms(now_ms.saturating_sub(gr.since_ms));
    let what = match gr.seen {
        Seen::Peak => format!(
            "its peak (allocated at the top of a step) rose from {} to {} over {climbing} ({})",
            human(c.from),
            human(gr.need),
            rate(c.rate)
        ),
        Seen::Flushes(n) => format!(
            "the allocator flushed its cache {n} times in {climbing}, its pool holding more right after each flush than after the one before (from {} to {}, {}): each step takes more again",
            human(c.from),
            human(c.to),
            rate(c.rate)
        ),
    };
    format!(
        "{what}, while allocated between steps stayed near {}",
        human(gr.floor)
    )
}

/// The growing need a failure at `at_ms` ended, in words, when the pool's history shows one (a
/// rise of at least `MIN_RISE`, warned or not).
pub fn grew_before(h: &PoolHistory, at_ms: u64) -> Option<String> {
    [peak_climbs(h, at_ms), flushes_climb(h, at_ms)]
        .into_iter()
        .flatten()
        .find(|gr| gr.climb.to.saturating_sub(gr.climb.from) >= MIN_RISE)
        .map(|gr| describe(&gr, at_ms))
}

/// The remedy for a need that grows every step, before the limit's own.
pub fn schedule_remedy(pid: u32) -> String {
    format!(
        "Stop pid {pid}'s batch-size or sequence-length schedule where its peak still fits, or lower each step's peak with activation checkpointing."
    )
}

/// Whether a climb is one to warn of: large enough, its limit within the horizon, and (for the
/// peak) nearer than the climb is old or the allocator already flushing to fit the steps.
fn due(gr: &Growing, lim: &Limit, flushes: usize, now_ms: u64) -> Option<u64> {
    let c = &gr.climb;
    let rise = c.to.saturating_sub(c.from);
    if rise < MIN_RISE.max(lim.total / 1000 * MIN_RISE_PERMILLE) || c.rate <= 0.0 {
        return None;
    }
    let eta = eta_ms(lim.headroom, c.rate);
    let climbing = now_ms.saturating_sub(gr.since_ms);
    let soon = eta <= climbing || flushes >= FLUSHES || matches!(gr.seen, Seen::Flushes(_));
    (eta < HORIZON_MS && soon).then_some(eta)
}

/// The growing-peak risk of a probed, live process: from its peak, else from its flushes.
pub fn risk(t: &ProcessTrack, pool: &Pool, g: &GpuTrack, now_ms: u64) -> Option<Risk> {
    let h = t.pool_history.as_ref()?;
    let flushes = h.retries_within(now_ms, FLUSH_WINDOW_MS);
    let (gr, lim, eta) = [peak_climbs(h, now_ms), flushes_climb(h, now_ms)]
        .into_iter()
        .flatten()
        .find_map(|gr| {
            let lim = limit(pool, g, gr.need)?;
            let eta = due(&gr, &lim, flushes, now_ms)?;
            Some((gr, lim, eta))
        })?;
    let c = &gr.climb;
    let pid = t.sample.pid;
    let fw = pool.framework;
    let name = limit_name(&lim, fw, g);
    let mut evidence = vec![
        describe(&gr, now_ms),
        format!(
            "the limit a step must fit under: {name}, {} left",
            human(lim.headroom)
        ),
        format!("at this rate it is reached in about {}", duration_ms(eta)),
    ];
    if flushes > 0 && gr.seen == Seen::Peak {
        evidence.push(format!(
            "the allocator flushed its cache to fit a step in {flushes} of the readings of the last {}",
            duration_ms(FLUSH_WINDOW_MS)
        ));
    }
    evidence.extend(figures(pool));
    let more_room = match lim.kind {
        LimitKind::Own => raise_limit(None, dialect_of(fw), &context(t)),
        LimitKind::Gpu => "Or give it a GPU with more free memory.".into(),
    };
    let grows = match gr.seen {
        Seen::Peak => format!("its peak grows {}", rate(c.rate)),
        Seen::Flushes(n) => format!(
            "its pool takes {} more after each of {n} cache flushes",
            rate(c.rate)
        ),
    };
    Some(Risk {
        class: "growing-peak",
        pid: Some(pid),
        gpu: t.sample.gpu_uuid.clone(),
        level: Level::Suspected,
        confidence: None,
        title: format!(
            "pid {pid} {} needs more every step ({grows}): reaches {name} in about {}",
            fw.label(),
            duration_ms(eta)
        ),
        evidence,
        remedy: format!("{} {more_room}", schedule_remedy(pid)),
    })
}

#[cfg(test)]
mod tests;
