//! A rank whose memory grows away from its job's other ranks. It is judged as a leak of that
//! process first: with the allocator probe, the leak rule's own verdict (`growth::risk`: what it
//! cannot release, allocated plus stranded, climbing with nothing released towards the limit that
//! binds first); without it, its device memory climbing by the same rule towards its GPU's free
//! memory. What the job adds is the other ranks over the same window: each running rank must have
//! readings and be flat beside it (one of its floor, median and ceiling rose by at most a quarter
//! as much from the window's first third to its last), and the climb must be larger than the
//! others' in-step noise. Ranks that grow together (warm-up, caches filling, evaluation on every
//! rank) are never "alone", and a job with one running rank has no one to compare with.

mod words;

use super::{IsNew, own_track};
use crate::analysis::growth::floor::GROUP_MS;
use crate::analysis::growth::{self, Climb, Limit, LimitKind};
use crate::model::{Alert, GpuTrack, Job, Machine, ProcessTrack, RankRow};
use crate::sample::Pool;
use words::Grown;

pub const GROWS_ALONE: &str = "rank-grows-alone";
/// The shortest window the other ranks are compared over.
const COMPARE_MS: u64 = 30_000;
/// The longest window the growth rule looks back over.
const LOOKBACK_MS: u64 = 60_000;
/// Every other rank rose by at most this share of the growing rank's rise (one part in …): see
/// `Moved::flat_beside`.
const FLAT_SHARE: u64 = 4;
/// The fewest readings (a probed rank's: floors of `GROUP_MS`) a rank needs in the window to be
/// compared.
const MIN_READINGS: usize = 4;
/// Without the probe, a climb smaller than this (or than `MIN_RISE_PERMILLE` of what the process
/// may reach) is noise: the leak rule's figures.
const MIN_RISE: u64 = 256 << 20;
const MIN_RISE_PERMILLE: u64 = 30;

/// Whether a rank's probe reads its pool now (and has read it before).
fn probed(t: &ProcessTrack) -> bool {
    t.pool_history.is_some() && t.sample.pool.value().is_some()
}

/// What a rank's growth is measured on, from `from_ms` on, reading by reading: with the probe,
/// its allocated plus stranded memory (what it cannot release: the leak rule's figure); without,
/// its device memory.
fn readings(t: &ProcessTrack, from_ms: u64) -> Vec<(u64, u64)> {
    match t.pool_history.as_ref().filter(|_| probed(t)) {
        Some(h) => h
            .allocated
            .iter()
            .zip(h.stranded.iter())
            .filter(|(a, _)| a.at_ms >= from_ms)
            .filter_map(|(a, s)| Some((a.at_ms, a.value?.saturating_add(s.value.unwrap_or(0)))))
            .collect(),
        None => t
            .history
            .iter()
            .filter(|p| p.at_ms >= from_ms)
            .filter_map(|p| Some((p.at_ms, p.value?)))
            .collect(),
    }
}

/// A rank's readings as they are compared: a probed rank's, the lowest of each
/// `floor::GROUP_MS` (a reading lands anywhere in a step, a transformer's temporaries gigabytes
/// above what it keeps: on 2 H200s a flat rank 1's readings spread 5 GiB while its floor stood
/// still); an unprobed rank's device memory as read (the pool's reserve does not move within a
/// step).
fn series(t: &ProcessTrack, from_ms: u64) -> Vec<(u64, u64)> {
    let raw = readings(t, from_ms);
    if probed(t) {
        floors(raw.into_iter())
    } else {
        raw
    }
}

/// The lowest reading of each `floor::GROUP_MS` of `points` (in time order), at its group's
/// first reading's time.
fn floors(points: impl Iterator<Item = (u64, u64)>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut group = None;
    for (at, bytes) in points {
        let g = at / GROUP_MS;
        match out.last_mut() {
            Some(last) if group == Some(g) => last.1 = last.1.min(bytes),
            _ => {
                out.push((at, bytes));
                group = Some(g);
            }
        }
    }
    out
}

/// The rate a rank keeps memory at since its climb began: a probed rank's allocated memory alone
/// (what it keeps; the holes its kept blocks leave grow the pool faster), else its device
/// memory's.
pub(super) fn kept_rate(t: &ProcessTrack, from_ms: u64, window: &Climb) -> f64 {
    match t.pool_history.as_ref().filter(|_| probed(t)) {
        Some(h) => {
            let allocated: Vec<(u64, u64)> = h
                .allocated
                .iter()
                .filter(|p| p.at_ms >= from_ms)
                .filter_map(|p| Some((p.at_ms, p.value?)))
                .collect();
            kept_since_onset(&allocated).unwrap_or_else(|| {
                since_onset(
                    &allocated,
                    &Climb {
                        rate: 0.0,
                        ..*window
                    },
                )
                .rate
            })
        }
        None => since_onset(&readings(t, from_ms), window).rate,
    }
}

/// The rate of `raw` (allocated readings, in time order) since its climb began, as the median of
/// its floors' rates one to the next (`step_rates`): blind to one jump (a model loaded as the
/// climb began, in a job that leaks from its first step) where a slope through them is not.
fn kept_since_onset(raw: &[(u64, u64)]) -> Option<f64> {
    let points = floors(raw.iter().copied());
    let (n, k) = (points.len(), points.len() / 3);
    if k == 0 {
        return None;
    }
    let band = points[..k].iter().map(|p| p.1).max()?;
    let now_ms = points[n - 1].0;
    let onset = raw
        .iter()
        .take_while(|p| p.0 < now_ms)
        .filter(|p| p.1 <= band)
        .last()
        .copied()
        .unwrap_or(points[0]);
    let since: Vec<(u64, u64)> = std::iter::once(onset)
        .chain(points.iter().copied().filter(|p| p.0 > onset.0))
        .collect();
    step_rates(&since)
}

/// How a rank's readings moved over a window.
pub struct Moved {
    /// The rises of its floor, median and ceiling from the window's first third to its last
    /// (0 where one fell).
    pub rises: [u64; 3],
    /// Its highest reading less its lowest: its in-step noise, when it is flat.
    pub spread: u64,
    /// The median of the last third: where it stands now.
    pub now: u64,
}

impl Moved {
    /// Whether it is flat beside `grown`: two of its floor, median and ceiling rose by at most
    /// one part in `share` of the same figure of the rank that grows. In-step noise rarely lifts
    /// two of a flat rank's; a rank that grows too lifts each. (Where a rank is not found flat,
    /// the growing rank's own leak rule speaks for it: nothing is lost.)
    fn flat_beside(&self, grown: &Moved, share: u64) -> bool {
        let flat = (0..3).filter(|i| self.rises[*i].saturating_mul(share) <= grown.rises[*i]);
        flat.count() >= 2
    }
}

fn moved(points: &[(u64, u64)]) -> Option<Moved> {
    let n = points.len();
    if n < MIN_READINGS {
        return None;
    }
    let k = n / 3;
    let sorted = |part: &[(u64, u64)]| {
        let mut v: Vec<u64> = part.iter().map(|p| p.1).collect();
        v.sort_unstable();
        v
    };
    let (first, last) = (sorted(&points[..k]), sorted(&points[n - k..]));
    let at = |i: usize| [0, k / 2, k - 1][i];
    let all = sorted(points);
    Some(Moved {
        rises: [0, 1, 2].map(|i| last[at(i)].saturating_sub(first[at(i)])),
        spread: all[n - 1] - all[0],
        now: last[k / 2],
    })
}

/// Another running rank over the growing rank's window.
pub struct Beside<'a> {
    pub row: &'a RankRow,
    pub moved: Moved,
    /// Whether it was measured on its probe's figures (else on its device memory).
    pub probed: bool,
}

/// A rank's climb and the limit it reaches: probed, the leak rule's verdict (`growth::risk`), its
/// climb and binding limit, where what climbs is what it keeps (a `leak`, or a growth its rule
/// calls a fragmentation while its allocated memory itself made at least half the climb: a leak
/// that fragments, whose decisive cause is what it keeps); unprobed, its device memory's climb
/// towards its GPU's free memory, by the leak rule's thresholds.
pub(super) fn climbing<'a>(
    t: &'a ProcessTrack,
    g: &GpuTrack,
    at_ms: u64,
) -> Option<(Climb, Limit, Option<&'a Pool>, Option<u64>)> {
    if let (Some(pool), Some(h)) = (t.sample.pool.value(), t.pool_history.as_ref()) {
        let risk = growth::risk(t, pool, g, at_ms)?;
        let limit = growth::binding(pool, g)?;
        // The climb the leak rule saw: its floor's through a busy loop's noise (which the
        // readings one by one do not show for a while), else the readings' own.
        let floor = growth::floor::leak(h, pool, &limit, at_ms);
        let c = floor
            .map(|f| Climb {
                span_ms: f.climb.span_ms,
                from: f.climb.from,
                to: f.climb.to,
                rate: f.climb.rate,
            })
            .or_else(|| growth::climb(h, at_ms))?;
        let kept = || {
            let from = at_ms.saturating_sub(c.span_ms);
            let allocated: Vec<(u64, u64)> = h
                .allocated
                .iter()
                .filter(|p| p.at_ms >= from && p.at_ms <= at_ms)
                .filter_map(|p| Some((p.at_ms, p.value?)))
                .collect();
            moved(&allocated)
                .is_some_and(|m| m.rises[1].saturating_mul(2) >= c.to.saturating_sub(c.from))
        };
        if risk.class != "leak" && !(risk.class == "fragmentation-risk" && kept()) {
            return None;
        }
        return Some((c, limit, Some(pool), floor.map(|f| f.eta_ms)));
    }
    let points = series(t, at_ms.saturating_sub(LOOKBACK_MS));
    let c = growth::climb_in(&points, at_ms)?;
    let free = g.sample.memory.value()?.free;
    let held = t.sample.device_memory.get()?;
    let limit = Limit {
        kind: LimitKind::Gpu,
        total: held.saturating_add(free),
        headroom: free,
    };
    let rise = c.to.saturating_sub(c.from);
    let fast = eta_ms(&c, &limit) < growth::HORIZON_MS;
    (rise >= MIN_RISE.max(limit.total / 1000 * MIN_RISE_PERMILLE) && fast)
        .then_some((c, limit, None, None))
}

#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]
pub(super) fn eta_ms(c: &Climb, limit: &Limit) -> u64 {
    if c.rate <= 0.0 {
        return u64::MAX;
    }
    (limit.headroom as f64 / c.rate * 1000.0) as u64
}

/// The climb as it stands now, from `raw` readings (in time order): since the last reading at
/// the level it began at (the highest floor of the window's first third: a reading that low is
/// before the climb, temporaries only add) to where its floors stand now (the median of their
/// last third). The window's average rate counts the flat time before a growth that began inside
/// it: it would say a rank that grows 130 MiB/s grows a third of that and reaches its cap three
/// times later; and a floor's time is its group's, seconds from when the climb began in it. Never
/// below the window's average.
fn since_onset(raw: &[(u64, u64)], c: &Climb) -> Climb {
    let points = floors(raw.iter().copied());
    let n = points.len();
    let k = n / 3;
    if k == 0 {
        return *c;
    }
    let band = points[..k].iter().map(|p| p.1).max().unwrap_or(c.from);
    let last = &points[n - k..];
    let (now_ms, to) = last[last.len() / 2];
    let (onset_ms, onset_bytes) = raw
        .iter()
        .take_while(|p| p.0 < now_ms)
        .filter(|p| p.1 <= band)
        .last()
        .copied()
        .unwrap_or(points[0]);
    let dt = now_ms.saturating_sub(onset_ms);
    #[allow(clippy::cast_precision_loss)]
    let two_point = to.saturating_sub(onset_bytes) as f64 * 1000.0 / dt.max(1000) as f64;
    // The slope through the onset and every floor since: steadier than two points where the
    // floors are noisy (the time it gives is the one said).
    let since: Vec<(u64, u64)> = std::iter::once((onset_ms, onset_bytes))
        .chain(points.iter().copied().filter(|p| p.0 > onset_ms))
        .collect();
    let rate = slope(&since).unwrap_or(two_point);
    Climb {
        span_ms: points[n - 1].0.saturating_sub(onset_ms),
        rate: rate.max(c.rate),
        ..*c
    }
}

/// The least-squares slope of `points` (time in ms, bytes), bytes a second; `None` with fewer
/// than three points or no spread in time.
#[allow(clippy::cast_precision_loss)]
fn slope(points: &[(u64, u64)]) -> Option<f64> {
    if points.len() < 3 {
        return None;
    }
    let n = points.len() as f64;
    let t0 = points[0].0;
    let xs: Vec<f64> = points.iter().map(|p| (p.0 - t0) as f64 / 1000.0).collect();
    let ys: Vec<f64> = points.iter().map(|p| p.1 as f64).collect();
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let var: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
    if var <= 0.0 {
        return None;
    }
    let cov: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    Some(cov / var)
}

/// The median of the rates from each point of `points` (time in ms, bytes) to the next, bytes a
/// second; `None` with fewer than three points.
#[allow(clippy::cast_precision_loss)]
fn step_rates(points: &[(u64, u64)]) -> Option<f64> {
    if points.len() < 3 {
        return None;
    }
    let mut rates: Vec<f64> = points
        .windows(2)
        .map(|w| {
            (w[1].1 as f64 - w[0].1 as f64) * 1000.0 / w[1].0.saturating_sub(w[0].0).max(1) as f64
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    let n = rates.len();
    Some(if n % 2 == 1 {
        rates[n / 2]
    } else {
        (rates[n / 2 - 1] + rates[n / 2]) / 2.0
    })
}

/// The job's running rank that grows while every other running rank stays flat beside it.
pub fn alert(machine: &Machine, job: &Job, at_ms: u64, is_new: IsNew) -> Option<Alert> {
    let running: Vec<(&RankRow, &ProcessTrack)> = job
        .ranks
        .iter()
        .filter(|r| r.running())
        .filter_map(|r| Some((r, own_track(machine, r)?)))
        .collect();
    if running.len() < 2 || running.len() < job.ranks.iter().filter(|r| r.running()).count() {
        return None;
    }
    running.iter().find_map(|(r, t)| {
        let g = machine.gpu(&r.gpu)?;
        let (window, limit, pool, floor_eta) = climbing(t, g, at_ms)?;
        let grew = window.to.saturating_sub(window.from);
        // The others are compared over the climb, and at least the last `COMPARE_MS`: a young
        // climb's few floors would let a flat rank's chance dips read as a rise.
        let last = t.history.last()?.at_ms;
        let (climbed, from) = (
            last.saturating_sub(window.span_ms),
            last.saturating_sub(window.span_ms.max(COMPARE_MS)),
        );
        let own = moved(&series(t, from))?;
        let mut beside = Vec::new();
        for (o, ot) in running.iter().filter(|(o, _)| o.pid != r.pid) {
            let moved = moved(&series(ot, from))?;
            if !moved.flat_beside(&own, FLAT_SHARE) {
                return None;
            }
            beside.push(Beside {
                row: o,
                moved,
                probed: probed(ot),
            });
        }
        // It rose by more than the others' in-step noise: a climb by chance in noise is not one.
        let mut spreads: Vec<u64> = beside.iter().map(|b| b.moved.spread).collect();
        spreads.sort_unstable();
        if grew.saturating_mul(2) < spreads[spreads.len() / 2].saturating_mul(3) {
            return None;
        }
        if !is_new(GROWS_ALONE, r.pid, &r.gpu) {
            return None;
        }
        let grown = Grown {
            row: r,
            track: t,
            gpu: g,
            climb: since_onset(&readings(t, climbed), &window),
            kept: kept_rate(t, climbed, &window),
            compared_ms: last.saturating_sub(from),
            floor_eta,
            own,
            limit,
            pool,
        };
        Some(grown.alert(machine, job, &beside, at_ms))
    })
}

#[cfg(test)]
mod tests;
