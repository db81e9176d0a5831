//! Every running rank of a job climbing alike: one cause in code every rank runs (issue 39). Each
//! rank is judged by the same rule as a rank growing alone (`alone::climbing`: the leak rule's
//! verdict with the probe, its device memory's climb without), and the ranks' rates must agree
//! within [`ALIKE_SHARE`] of each other. One alert for the job, in place of one `leak` a rank: it
//! stands for each rank's own growth alerts (`ranks::stands_for_job`), and a rank's leak raised
//! before it is taken over (`pipeline`).

use super::alone::{climbing, eta_ms, kept_rate};

#[cfg(test)]
mod tests;
use super::{IsNew, gpu_name, job_line, own_track, rank_word};
use crate::analysis::growth;
use crate::model::units::{duration_ms, rate};
use crate::model::{Alert, Job, Level, Machine, ProcessTrack, RankRow};

pub const GROW_ALIKE: &str = "ranks-grow-alike";
/// The fastest rank keeps at most this many times the slowest's rate.
const ALIKE_SHARE: f64 = 2.0;

/// One rank's climb, as the alert says it.
struct Climbing<'a> {
    row: &'a RankRow,
    kept: f64,
    eta_ms: u64,
    limit: String,
}

/// The job's alert when all its running ranks (two or more, each with its own track) climb alike.
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
    let mut climbs = Vec::with_capacity(running.len());
    for (r, t) in &running {
        let g = machine.gpu(&r.gpu)?;
        let (c, limit, pool, floor_eta) = climbing(t, g, at_ms)?;
        let kept = kept_rate(t, at_ms.saturating_sub(c.span_ms), &c);
        if kept <= 0.0 {
            return None;
        }
        let name = match pool {
            Some(p) => growth::limit_name(&limit, p.framework, g),
            None => format!("{}'s free memory", gpu_name(machine, &r.gpu)),
        };
        climbs.push(Climbing {
            row: r,
            kept,
            eta_ms: eta_ms(&c, &limit).min(floor_eta.unwrap_or(u64::MAX)),
            limit: name,
        });
    }
    let (lo, hi) = climbs.iter().fold((f64::MAX, 0.0_f64), |(lo, hi), c| {
        (lo.min(c.kept), hi.max(c.kept))
    });
    if hi > lo * ALIKE_SHARE {
        return None;
    }
    let first = climbs.iter().min_by_key(|c| (c.row.rank, c.row.pid))?;
    if !is_new(GROW_ALIKE, first.row.pid, &first.row.gpu) {
        return None;
    }
    Some(words(machine, job, &climbs, first, at_ms))
}

fn words(machine: &Machine, job: &Job, climbs: &[Climbing], first: &Climbing, at_ms: u64) -> Alert {
    let n = climbs.len();
    #[allow(clippy::cast_precision_loss)]
    let mean = climbs.iter().map(|c| c.kept).sum::<f64>() / n as f64;
    let soonest = climbs.iter().min_by_key(|c| c.eta_ms).unwrap_or(first);
    let mut evidence: Vec<String> = climbs
        .iter()
        .map(|c| {
            format!(
                "{} (pid {}) on {} keeps {} — reaches {} in about {}",
                rank_word(c.row),
                c.row.pid,
                gpu_name(machine, &c.row.gpu),
                rate(c.kept),
                c.limit,
                duration_ms(c.eta_ms)
            )
        })
        .collect();
    evidence.push(job_line(job));
    Alert {
        at_ms,
        gpu_uuid: Some(first.row.gpu.clone()),
        pid: Some(first.row.pid),
        level: Level::Suspected,
        class: GROW_ALIKE.into(),
        confidence: None,
        title: format!(
            "all {n} ranks grow {} alike: code every rank runs keeps memory from step to step; {} first reaches its limit in about {}",
            rate(mean),
            rank_word(soonest.row),
            duration_ms(soonest.eta_ms)
        ),
        evidence,
        remedy: Some(
            "Look in the code every rank runs for what keeps memory alive from step to step: outputs or losses kept in a list, tensors (or slices of them: a view keeps its whole tensor) stored without .detach() or .item(), caches keyed by shape. One fix serves every rank; an allocator setting or a larger limit only delays it."
                .into(),
        ),
        job: Some(job.id.clone()),
    }
}
