//! A peak that grows: each step needs more than the last (a batch-size or sequence-length
//! schedule), while what stays allocated between steps is flat. Read from the probe's peak of
//! allocated memory (each reading the highest of the last seconds, so a job that resets its peak
//! every step still shows each step's whole peak), else the pool's high-water mark; projected to
//! the limit the peak must fit under (its own cap, else its pool plus what the GPU has free).
//! Warned when, at its rate, that limit is nearer than the climb is old, or when the allocator
//! already flushes its cache again and again to fit the steps.

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

/// `ring`'s readings from `from_ms` on, each the `pick` (max or min) of those within `STEP_MS`
/// before it.
fn over_steps(ring: &Ring, from_ms: u64, pick: fn(u64, u64) -> u64) -> Vec<(u64, u64)> {
    let raw: Vec<(u64, u64)> = ring
        .iter()
        .filter(|p| p.at_ms.saturating_add(STEP_MS) >= from_ms)
        .filter_map(|p| Some((p.at_ms, p.value?)))
        .collect();
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

/// The ring that shows each step's need: the peak where the framework reports one, else the
/// pool's high-water mark.
fn need_ring(h: &PoolHistory) -> &Ring {
    if h.peak.iter().any(|p| p.value.is_some()) {
        &h.peak
    } else {
        &h.reserved
    }
}

/// A climb of the peak over flat allocated: the climb, since when it left its first level, and
/// what stays allocated between steps now.
struct Growing {
    climb: Climb,
    since_ms: u64,
    peak: u64,
    floor: u64,
}

fn growing(h: &PoolHistory, now_ms: u64) -> Option<Growing> {
    WINDOWS_MS.iter().find_map(|w| {
        let from = now_ms.saturating_sub(*w);
        let peaks = over_steps(need_ring(h), from, u64::max);
        let c = climbs(&peaks)?;
        let floors = over_steps(&h.allocated, from, u64::min);
        let (first, last) = (floors.first()?.1, floors.last()?.1);
        let rise = c.to.saturating_sub(c.from);
        if last.saturating_sub(first).saturating_mul(FLAT_SHARE) > rise {
            return None;
        }
        // Still climbing: above where it stood `RISING_MS` ago (a warm-up that stopped, or a
        // running peak that last rose long ago, is not warned).
        let now = peaks.last()?;
        let before = peaks
            .iter()
            .rev()
            .find(|p| now.0.saturating_sub(p.0) >= RISING_MS)?;
        if now.1 <= before.1 {
            return None;
        }
        let since_ms = peaks.iter().rev().find(|p| p.1 <= c.from)?.0;
        Some(Growing {
            climb: c,
            since_ms,
            peak: peaks.last()?.1,
            floor: last,
        })
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

/// The growing-peak risk of a probed, live process.
pub fn risk(t: &ProcessTrack, pool: &Pool, g: &GpuTrack, now_ms: u64) -> Option<Risk> {
    let h = t.pool_history.as_ref()?;
    let gr = growing(h, now_ms)?;
    let c = &gr.climb;
    let lim = limit(pool, g, gr.peak)?;
    let rise = c.to.saturating_sub(c.from);
    if rise < MIN_RISE.max(lim.total / 1000 * MIN_RISE_PERMILLE) || c.rate <= 0.0 {
        return None;
    }
    let eta = eta_ms(lim.headroom, c.rate);
    let climbing = now_ms.saturating_sub(gr.since_ms);
    let flushes = h.retries_within(now_ms, FLUSH_WINDOW_MS);
    if eta >= HORIZON_MS || (eta > climbing && flushes < FLUSHES) {
        return None;
    }
    let pid = t.sample.pid;
    let fw = pool.framework;
    let name = limit_name(&lim, fw, g);
    let mut evidence = vec![
        format!(
            "its peak (allocated at the top of a step) rose from {} to {} over {} ({}), while allocated between steps stayed near {}",
            human(c.from),
            human(gr.peak),
            duration_ms(climbing),
            rate(c.rate),
            human(gr.floor)
        ),
        format!(
            "the limit a step's peak must fit under: {name}, {} left",
            human(lim.headroom)
        ),
        format!("at this rate it is reached in about {}", duration_ms(eta)),
    ];
    if flushes > 0 {
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
    Some(Risk {
        class: "growing-peak",
        pid: Some(pid),
        gpu: t.sample.gpu_uuid.clone(),
        level: Level::Suspected,
        confidence: None,
        title: format!(
            "pid {pid} {} needs more every step: its peak grows {}, reaches {name} in about {}",
            fw.label(),
            rate(c.rate),
            duration_ms(eta)
        ),
        evidence,
        remedy: format!(
            "Stop pid {pid}'s batch-size or sequence-length schedule where its peak still fits, or lower each step's peak with activation checkpointing. {more_room}"
        ),
    })
}

#[cfg(test)]
mod tests;
