//! Findings about the ranks of a distributed job side by side (`model::jobs`): every rank
//! climbing alike (`ranks-grow-alike`, `alike.rs`: one cause in code every rank runs), one rank
//! whose memory grows away from its job's other ranks (`rank-grows-alone`, `alone.rs`), and
//! ranks that also hold memory on another rank's GPU (`rank-extra-context`, `stray.rs`), and a
//! rank that stops coming to the collectives, named before any watchdog fires (`rank-stalled`,
//! `stalled.rs`).
//!
//! A rank that grows alone stands for that process's own growth alert: raised first in the scan,
//! it makes its `leak` and `fragmentation-risk` on that GPU count as raised (`stands_for`), so the
//! user reads one alert for one climb; a `leak` raised before it (a slow leak, seen over minutes)
//! stays that one alert and this one is not raised.

pub mod alike;
pub mod alone;
pub mod stalled;
pub mod stray;

use crate::model::{Alert, Job, Machine, ProcKey, ProcessTrack, RankRow};

pub use alike::GROW_ALIKE;
pub use alone::GROWS_ALONE;
pub use stray::EXTRA_CONTEXT;

/// The classes of a rank's own alerts that its `rank-grows-alone` stands for.
const STANDS_FOR: [&str; 2] = ["leak", "fragmentation-risk"];

/// Whether an alert of class `raised` already stands for one of class `asked` (same process and
/// GPU): a rank's `rank-grows-alone` is its `leak` and its growth's `fragmentation-risk`.
pub fn stands_for(raised: &str, asked: &str) -> bool {
    raised == GROWS_ALONE && STANDS_FOR.contains(&asked)
}

/// Whether a job's `ranks-grow-alike`, raised before or in this scan (`fresh`), stands for an
/// alert of class `asked` of `pid`, one of its ranks: it is every rank's `leak` and
/// `fragmentation-risk`, and no rank of it grows alone.
pub fn alike_stands_for(machine: &Machine, fresh: &[Alert], pid: u32, asked: &str) -> bool {
    if !(STANDS_FOR.contains(&asked) || asked == GROWS_ALONE) {
        return false;
    }
    let Some((job, _)) = machine.job_of(pid) else {
        return false;
    };
    machine
        .alerts
        .iter()
        .chain(fresh)
        .any(|a| a.class == GROW_ALIKE && a.job.as_deref() == Some(job.id.as_str()))
}

/// Whether a job alert of a class is new: asked with (class, pid, GPU) only once the numbers say
/// it fires.
pub type IsNew<'a> = &'a dyn Fn(&str, u32, &str) -> bool;

/// The job findings at `at_ms`, each raised once: a rank growing alone (once per process and
/// GPU, `is_new` says whether it was raised), ranks on another rank's GPU (once per job).
pub fn alerts(machine: &Machine, at_ms: u64, is_new: IsNew) -> Vec<Alert> {
    let mut out = Vec::new();
    for job in &machine.jobs {
        let alike = alike::alert(machine, job, at_ms, is_new);
        let some = alike.is_some();
        out.extend(alike);
        if !some {
            out.extend(alone::alert(machine, job, at_ms, is_new));
        }
        out.extend(stalled::alert(machine, job, at_ms, is_new));
        out.extend(stray::alert(machine, job, at_ms));
    }
    out
}

/// A rank's own track on its own GPU, while it runs.
pub fn own_track<'a>(machine: &'a Machine, r: &RankRow) -> Option<&'a ProcessTrack> {
    let key = ProcKey {
        gpu_uuid: r.gpu.clone(),
        pid: r.pid,
        start_time: r.start_time,
    };
    machine
        .processes
        .get(&key)
        .filter(|t| t.exited_ms.is_none())
}

/// "rank 3 (pid 812)", or "pid 812 (rank unknown)".
pub fn who(r: &RankRow) -> String {
    match r.rank {
        Some(n) => format!("rank {n} (pid {})", r.pid),
        None => format!("pid {} (rank unknown)", r.pid),
    }
}

/// "GPU0", or the UUID of a GPU not sampled.
pub fn gpu_name(machine: &Machine, uuid: &str) -> String {
    machine
        .gpu(uuid)
        .map_or_else(|| uuid.to_string(), |g| format!("GPU{}", g.sample.index))
}

/// The job in one evidence line.
pub fn job_line(job: &Job) -> String {
    let world = job
        .world_size
        .map_or_else(String::new, |w| format!(", world size {w}"));
    let running = job.ranks.iter().filter(|r| r.running()).count();
    format!(
        "job {} ({}{world}): {running} running rank(s) on this machine",
        job.id,
        job.launcher.label()
    )
}

/// "rank 1", or "pid 812" when its rank is unknown.
pub fn rank_word(r: &RankRow) -> String {
    r.rank
        .map_or_else(|| format!("pid {}", r.pid), |n| format!("rank {n}"))
}

#[cfg(test)]
mod tests;
