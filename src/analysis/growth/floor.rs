//! A floor that climbs in a busy loop: what a probed process keeps from step to step, read
//! through the noise of its steps. A reading of allocated memory lands anywhere in a step (at its
//! floor, or with the step's temporaries on top, gigabytes more in a transformer), so readings one
//! by one say little; the lowest of each few seconds of them does.
//!
//! The readings of the last minute are cut into groups of `GROUP_MS` (the newest ends now); each
//! group's floor is its lowest reading, and the floor series is each group's floor or any later
//! one's, whichever is lower (what stayed allocated from then on). Walking back from the newest
//! group, the climb goes on while nothing was released: a group whose floor stands above the later
//! floors may be one whose readings all fell inside steps, but two such groups in a row mean the
//! memory was given back (an evaluation, a cache flush, a new epoch), and the climb starts after
//! them. It is a climb when it spans at least `MIN_GROUPS` groups, rose in nearly every one of
//! them (a warm-up's two or three jumps are not a climb) with no one group's rise more than half
//! of the whole (a model loaded is not a climb), by at least what the caller asks.
//!
//! Where most readings sit on that floor (a job that waits at a sync point between steps, the
//! usual case: the probe reads while the job waits), four groups are enough, rising by at least
//! half of what the readings of one group typically spread. Where most do not (readings spread
//! through its steps), the lowest of later groups is lower than an earlier one's by chance alone,
//! so a climb must be longer (`JITTERY_GROUPS`), its groups' own floors must rise nearly every
//! time, and it must rise by more than the readings of one group spread.
//!
//! A young climb (`YOUNG_MS`) is warned only when it reaches the limit within
//! `FAST_HORIZON_MS` and the pool grew with it (what a job keeps comes from somewhere: a floor
//! that rose by chance in a pool that did not grow is noise); an older one within the caller's
//! horizon.

use crate::model::PoolHistory;
use crate::model::units::{duration_ms, rate};
use crate::oom::sizes::human;
use crate::sample::Pool;

use super::{Limit, MIN_RISE, MIN_RISE_PERMILLE};

/// The readings are grouped by this long (three readings at one a second).
pub const GROUP_MS: u64 = 3_000;
/// The groups looked at, at most: the last minute.
const MAX_GROUPS: u64 = 20;
/// The fewest groups a climb spans (about 12 s of readings), and where most readings do not sit
/// on the floor (about 21 s).
const MIN_GROUPS: usize = 4;
const JITTERY_GROUPS: usize = 7;
/// A climb rises at least this many times what its groups' floors typically stand above it.
const BIAS_TIMES: u64 = 4;
/// Moves of the floor smaller than this are noise (rounding, the allocator's bookkeeping).
const TOL: u64 = 32 << 20;
/// A climb younger than this is warned only when it reaches the limit within `FAST_HORIZON_MS`:
/// seen fast, but only when it is fast.
const YOUNG_MS: u64 = 30_000;
pub const FAST_HORIZON_MS: u64 = 2 * 60_000;
/// What the steps reach above the floor is read from the readings of this long.
const LEVEL_MS: u64 = 2 * GROUP_MS;

/// A climb of a floor, read from group floors.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FloorClimb {
    /// From the first reading of its first group to the newest reading.
    pub span_ms: u64,
    /// The floor at its first and last group.
    pub from: u64,
    pub to: u64,
    /// Bytes per second, the slope of the floors over their readings' times.
    pub rate: f64,
    pub groups: usize,
}

/// One group: its first reading's time, its lowest reading and when, its highest; `floor` is its
/// lowest or any later group's, whichever is lower.
#[derive(Debug, Clone, Copy)]
struct Group {
    first_at: u64,
    low_at: u64,
    low: u64,
    high: u64,
    floor: u64,
}

/// The groups of `series` (time, bytes; in time order) from `since_ms` to `now_ms`, oldest
/// first; `None` for a group without a reading.
fn groups(series: &[(u64, u64)], since_ms: u64, now_ms: u64) -> Vec<Option<Group>> {
    let span = GROUP_MS * MAX_GROUPS;
    let from = now_ms.saturating_sub(span).max(since_ms);
    let n = usize::try_from(now_ms.saturating_sub(from).div_ceil(GROUP_MS)).unwrap_or(0);
    let mut out: Vec<Option<Group>> = vec![None; n];
    for &(at, v) in series.iter().filter(|p| p.0 > from && p.0 <= now_ms) {
        // Group 0 is the oldest; the newest ends at `now_ms`.
        let back = usize::try_from((now_ms - at) / GROUP_MS).unwrap_or(usize::MAX);
        let Some(i) = n.checked_sub(back + 1) else {
            continue;
        };
        let g = out[i].get_or_insert(Group {
            first_at: at,
            low_at: at,
            low: v,
            high: v,
            floor: v,
        });
        if v < g.low {
            (g.low, g.low_at) = (v, at);
        }
        g.high = g.high.max(v);
    }
    out
}

/// The floor of `series` climbing with nothing released into `now_ms`, readings before
/// `since_ms` left out (a process's start-up).
pub fn climb(series: &[(u64, u64)], since_ms: u64, now_ms: u64) -> Option<FloorClimb> {
    let gs = groups(series, since_ms, now_ms);
    // Back from the newest group: each group's floor against the lowest floor after it.
    let mut run: Vec<Group> = Vec::new();
    let mut later_low = u64::MAX;
    let mut above_before = false;
    for g in gs.iter().rev() {
        let Some(g) = *g else { break };
        let above = g.low > later_low.saturating_add(TOL);
        if above && above_before {
            // Two groups in a row above a later floor: released, not noise. The first of them
            // (the newer) is not part of the climb either.
            run.pop();
            break;
        }
        above_before = above;
        later_low = later_low.min(g.low);
        run.push(Group {
            floor: later_low,
            ..g
        });
    }
    if above_before {
        // The oldest group stood above the floors after it: not part of the climb.
        run.pop();
    }
    run.reverse();
    let c = judge(&run, now_ms)?;
    // The lowest of later groups is lower by chance alone: the groups' own floors stand above
    // the series by that much, and the climb must be well above it.
    let mut above: Vec<u64> = run.iter().map(|g| g.low - g.floor).collect();
    above.sort_unstable();
    if c.to - c.from < BIAS_TIMES * above[above.len() / 2] {
        return None;
    }
    let rise = c.to - c.from;
    let on_floor = on_floor(series, &run, now_ms, rise) && rise >= spread(&run) / 2;
    (on_floor || jittery_climb(&run, rise)).then_some(c)
}

/// Whether the floors of `run` (oldest first, none above a later one) make a climb.
fn judge(run: &[Group], now_ms: u64) -> Option<FloorClimb> {
    let n = run.len();
    if n < MIN_GROUPS {
        return None;
    }
    let (from, to) = (run[0].floor, run[n - 1].floor);
    let rise = to.checked_sub(from)?;
    let steps: Vec<u64> = run.windows(2).map(|w| w[1].floor - w[0].floor).collect();
    let rising = steps.iter().filter(|s| **s > TOL).count();
    let largest = steps.iter().copied().max().unwrap_or(0);
    // Nearly every group rose (one flat step in four allowed), none by half of the whole.
    if rising * 4 < steps.len() * 3 || largest.saturating_mul(2) > rise {
        return None;
    }
    let (rate, _) = line(run)?;
    Some(FloorClimb {
        span_ms: now_ms.saturating_sub(run[0].first_at),
        from,
        to,
        rate,
        groups: n,
    })
}

/// Whether most readings of the climb sit on its floor line (within a tenth of its rise).
fn on_floor(series: &[(u64, u64)], run: &[Group], now_ms: u64, rise: u64) -> bool {
    let Some((rate, at)) = line(run) else {
        return false;
    };
    let margin = (2 * TOL).max(rise / 10);
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
    let floor_at = |t: u64| at.1 + (rate * (t as f64 - at.0 as f64) / 1000.0) as i128;
    let from = run[0].first_at;
    let (near, all) = series.iter().filter(|p| p.0 >= from && p.0 <= now_ms).fold(
        (0usize, 0usize),
        |(n, a), p| {
            let near = i128::from(p.1) <= floor_at(p.0) + i128::from(margin);
            (n + usize::from(near), a + 1)
        },
    );
    near * 2 >= all
}

/// Where readings spread through the steps: a longer climb whose groups' own floors rose nearly
/// every time, by more than the readings of one group typically spread.
fn jittery_climb(run: &[Group], rise: u64) -> bool {
    let rising = run.windows(2).filter(|w| w[1].low > w[0].low + TOL).count();
    run.len() >= JITTERY_GROUPS && rise >= spread(run) && rising * 6 >= (run.len() - 1) * 5
}

/// How far the readings of one group typically spread (the median group's highest − lowest).
fn spread(run: &[Group]) -> u64 {
    let mut spreads: Vec<u64> = run.iter().map(|g| g.high - g.low).collect();
    spreads.sort_unstable();
    spreads[spreads.len() / 2]
}

/// The least-squares line through the floors: its slope in bytes a second, and the point
/// (time, bytes) it passes through (the floors' means).
#[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
fn line(run: &[Group]) -> Option<(f64, (u64, i128))> {
    let n = run.len() as f64;
    let t0 = run[0].low_at;
    let xs: Vec<f64> = run.iter().map(|g| (g.low_at - t0) as f64).collect();
    let ys: Vec<f64> = run.iter().map(|g| g.floor as f64).collect();
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let slope = (sxx > 0.0)
        .then(|| sxy / sxx * 1000.0)
        .filter(|r| *r > 0.0)?;
    Some((slope, (t0 + mx as u64, my as i128)))
}

/// A leak seen in the floor of a probed process's allocated memory: the climb, and when its
/// steps reach the limit at its rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FloorLeak {
    pub climb: FloorClimb,
    /// What the process's steps reach now (the highest recent reading, plus what is stranded),
    /// and what is left of the limit above it.
    pub level: u64,
    pub headroom: u64,
    pub eta_ms: u64,
    /// Whether the pool (what it holds from the GPU) grew by a quarter of the floor's rise or
    /// more over the climb.
    pub pool_grew: bool,
}

/// The leak in `track`'s allocated floor, when it climbs into `now_ms` by enough to matter
/// against `limit`, and when its steps reach the limit at its rate.
pub fn leak(track: &PoolHistory, pool: &Pool, limit: &Limit, now_ms: u64) -> Option<FloorLeak> {
    let from = now_ms.saturating_sub(GROUP_MS * MAX_GROUPS);
    let series: Vec<(u64, u64)> = track
        .allocated
        .iter()
        .filter(|p| p.at_ms > from)
        .filter_map(|p| Some((p.at_ms, p.value?)))
        .collect();
    let c = climb(&series, 0, now_ms)?;
    if c.to - c.from < MIN_RISE.max(limit.total / 1000 * MIN_RISE_PERMILLE) {
        return None;
    }
    // The steps' own need shows in the readings that fell inside them (the probe's peak is the
    // run's high-water mark, not this step's).
    let top = series
        .iter()
        .filter(|p| p.0 + LEVEL_MS > now_ms)
        .map(|p| p.1)
        .max()
        .unwrap_or(c.to);
    let level = top.saturating_add(pool.stranded.unwrap_or(0));
    let headroom = limit.total.saturating_sub(level);
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let eta_ms = (headroom as f64 / c.rate * 1000.0) as u64;
    let since = now_ms.saturating_sub(c.span_ms);
    let held = |at_ms: u64| {
        track
            .reserved
            .iter()
            .filter(|p| p.at_ms >= at_ms && p.at_ms <= now_ms)
            .find_map(|p| p.value)
    };
    let newest = track.reserved.last().and_then(|p| p.value);
    let pool_grew = held(since)
        .zip(newest)
        .is_some_and(|(a, b)| b >= a.saturating_add((c.to - c.from) / 4));
    Some(FloorLeak {
        climb: c,
        level,
        headroom,
        eta_ms,
        pool_grew,
    })
}

impl FloorLeak {
    /// Whether it is warned: while younger than `YOUNG_MS`, when it reaches the limit within
    /// `FAST_HORIZON_MS` and the pool grew with it; once older, within `horizon_ms`.
    pub fn warns(&self, horizon_ms: u64) -> bool {
        if self.climb.span_ms < YOUNG_MS {
            self.pool_grew && self.eta_ms < FAST_HORIZON_MS
        } else {
            self.eta_ms < horizon_ms
        }
    }

    /// Its evidence lines; `limit` names the limit that binds first.
    pub fn evidence(&self, limit: &str) -> Vec<String> {
        let c = &self.climb;
        vec![
            format!(
                "the floor of its allocated memory (the lowest reading of each {} s) rose from {} to {} over {} ({}), nothing released in between: what it keeps from step to step",
                GROUP_MS / 1000,
                human(c.from),
                human(c.to),
                duration_ms(c.span_ms),
                rate(c.rate)
            ),
            format!(
                "its steps reach {} with what is stranded; the limit that binds first: {limit}, {} left above that",
                human(self.level),
                human(self.headroom)
            ),
            format!(
                "at this rate it is reached in about {}",
                duration_ms(self.eta_ms)
            ),
        ]
    }
}

#[cfg(test)]
mod tests;
