//! Distributed jobs on one machine: the processes whose ranks carry one job id, grouped, each
//! rank's memory side by side, and how far the largest rank stands from the median. Derived in
//! `Machine::ingest` from the process tracks (the screen, snapshots and analysis read them).

use std::collections::BTreeMap;

use crate::model::{ProcKey, ProcessTrack};
use crate::sample::Launcher;

/// A rank is "growing" at this rate or more (device memory, bytes a second over the growth
/// window); one that grows at a tenth of the fastest rank's rate or less is flat beside it.
pub const GROWING_BYTES_PER_S: f64 = (1 << 20) as f64;

/// One distributed job: its ranks on this machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub id: String,
    pub launcher: Launcher,
    /// The world size its ranks say (the most common value; `problems` says when they differ).
    pub world_size: Option<u32>,
    /// One row a process, by rank (an unknown rank last), then pid.
    pub ranks: Vec<RankRow>,
    /// The GPUs any of its running ranks holds memory on (UUIDs, sorted).
    pub gpus: Vec<String>,
    /// Device memory of its running ranks, summed over every GPU each is on (known readings).
    pub device: u64,
    /// What does not hold together: two running processes claiming one rank, ranks that
    /// disagree on the world size, a rank's own problem.
    pub problems: Vec<String>,
    /// The running rank holding the most device memory against the median of the other running
    /// ranks (two running ranks with readings at least).
    pub imbalance: Option<Imbalance>,
}

/// One process of a job.
#[derive(Debug, Clone, PartialEq)]
pub struct RankRow {
    pub pid: u32,
    pub start_time: Option<u64>,
    /// `None`: its rank could not be trusted, or another running process claims the same one.
    pub rank: Option<u32>,
    pub local_rank: Option<u32>,
    pub node: Option<u32>,
    /// Its own GPU: where it holds the most device memory (the first it was seen on, before any).
    pub gpu: String,
    /// Its device memory on every GPU it is on together; `None` when NVML gave no reading.
    pub device: Option<u64>,
    /// Memory it holds on other GPUs than its own (UUID, bytes): a second context, often from
    /// `torch.load` without `map_location` or no `set_device`.
    pub elsewhere: Vec<(String, Option<u64>)>,
    /// Its framework pool on its own GPU (the probe's), when probed.
    pub allocated: Option<u64>,
    pub reserved: Option<u64>,
    /// Growth of its device memory on its own GPU over the growth window, bytes a second.
    pub growth: Option<f64>,
    pub exited_ms: Option<u64>,
    /// Whether its probe saw a NCCL process group (`None`: not probed, or no group yet).
    pub nccl: Option<bool>,
}

impl RankRow {
    pub fn running(&self) -> bool {
        self.exited_ms.is_none()
    }
}

/// The largest running rank against the others.
#[derive(Debug, Clone, PartialEq)]
pub struct Imbalance {
    pub pid: u32,
    pub rank: Option<u32>,
    pub largest: u64,
    /// The median of the other running ranks (with two ranks: the other one).
    pub median: u64,
    /// `largest / median`.
    pub ratio: f64,
    /// It grows (`GROWING_BYTES_PER_S` or more) while every other running rank is flat beside it.
    pub grows_alone: bool,
}

/// A process's tracks, one a GPU it is on, by (pid, start time).
type Tracks<'a> = BTreeMap<(u32, Option<u64>), Vec<&'a ProcessTrack>>;

/// The jobs among `processes`, by id.
pub fn derive(processes: &BTreeMap<ProcKey, ProcessTrack>) -> Vec<Job> {
    let mut by_job: BTreeMap<&str, Tracks<'_>> = BTreeMap::new();
    for t in processes.values() {
        if let Some(job) = t.sample.rank.as_ref().and_then(|r| r.job.as_deref()) {
            by_job
                .entry(job)
                .or_default()
                .entry((t.key.pid, t.key.start_time))
                .or_default()
                .push(t);
        }
    }
    by_job
        .into_iter()
        .map(|(id, procs)| job(id, procs.into_values().collect()))
        .collect()
}

fn job(id: &str, procs: Vec<Vec<&ProcessTrack>>) -> Job {
    let mut problems = Vec::new();
    let mut ranks: Vec<RankRow> = procs.iter().map(|tracks| row(tracks)).collect();
    let first = |tracks: &Vec<&ProcessTrack>| tracks[0].sample.rank.clone();
    let launcher = procs
        .iter()
        .filter_map(first)
        .map(|r| r.launcher)
        .min()
        .unwrap_or(Launcher::Env);
    // Each rank's own problem, once.
    for (tracks, r) in procs.iter().zip(&ranks) {
        if let Some(p) = first(tracks).and_then(|r| r.problem) {
            problems.push(format!("pid {}: {p}", r.pid));
        }
    }
    // The world size most ranks say.
    let mut sizes: BTreeMap<u32, usize> = BTreeMap::new();
    for r in procs.iter().filter_map(first) {
        if let Some(w) = r.world_size {
            *sizes.entry(w).or_default() += 1;
        }
    }
    let world_size = sizes
        .iter()
        .max_by_key(|(w, n)| (**n, std::cmp::Reverse(**w)))
        .map(|(w, _)| *w);
    if sizes.len() > 1 {
        let said: Vec<String> = sizes.keys().map(u32::to_string).collect();
        problems.push(format!(
            "its ranks disagree on the world size ({})",
            said.join(", ")
        ));
    }
    // Two running processes claiming one rank: neither is trusted with it.
    let mut claims: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for r in ranks.iter().filter(|r| r.running()) {
        if let Some(n) = r.rank {
            claims.entry(n).or_default().push(r.pid);
        }
    }
    for (n, pids) in claims.iter().filter(|(_, p)| p.len() > 1) {
        let pids: Vec<String> = pids.iter().map(|p| format!("pid {p}")).collect();
        problems.push(format!("{} all say rank {n}", pids.join(" and ")));
        for r in ranks
            .iter_mut()
            .filter(|r| r.running() && r.rank == Some(*n))
        {
            r.rank = None;
        }
    }
    ranks.sort_by_key(|r| (r.rank.is_none(), r.rank, r.pid));
    let mut gpus: Vec<String> = ranks
        .iter()
        .filter(|r| r.running())
        .flat_map(|r| std::iter::once(r.gpu.clone()).chain(r.elsewhere.iter().map(|e| e.0.clone())))
        .collect();
    gpus.sort();
    gpus.dedup();
    let device = ranks
        .iter()
        .filter(|r| r.running())
        .filter_map(|r| r.device)
        .sum();
    Job {
        id: id.to_string(),
        launcher,
        world_size,
        imbalance: imbalance(&ranks),
        ranks,
        gpus,
        device,
        problems,
    }
}

/// One process's row from its tracks (one a GPU it is on).
fn row(tracks: &[&ProcessTrack]) -> RankRow {
    let own = tracks
        .iter()
        .max_by_key(|t| {
            (
                t.sample.device_memory.get(),
                std::cmp::Reverse(t.first_seen_ms),
            )
        })
        .copied()
        .unwrap_or(tracks[0]);
    let rank = own.sample.rank.as_ref();
    let device = tracks
        .iter()
        .map(|t| t.sample.device_memory.get())
        .try_fold(0u64, |sum, m| Some(sum.saturating_add(m?)));
    let pool = own.sample.pool.value();
    RankRow {
        pid: own.key.pid,
        start_time: own.key.start_time,
        rank: rank.and_then(|r| r.rank),
        local_rank: rank.and_then(|r| r.local_rank),
        node: rank.and_then(|r| r.node),
        gpu: own.key.gpu_uuid.clone(),
        device,
        elsewhere: tracks
            .iter()
            .filter(|t| t.key.gpu_uuid != own.key.gpu_uuid)
            .map(|t| (t.key.gpu_uuid.clone(), t.sample.device_memory.get()))
            .collect(),
        allocated: pool.and_then(|p| p.allocated),
        reserved: pool.and_then(|p| p.reserved),
        growth: own.growth,
        exited_ms: tracks
            .iter()
            .filter_map(|t| t.exited_ms)
            .max()
            .filter(|_| tracks.iter().all(|t| t.exited_ms.is_some())),
        nccl: rank.and_then(crate::sample::Rank::nccl),
    }
}

/// The largest running rank against the median of the other running ranks.
fn imbalance(ranks: &[RankRow]) -> Option<Imbalance> {
    let running: Vec<&RankRow> = ranks.iter().filter(|r| r.running()).collect();
    let top = running
        .iter()
        .filter(|r| r.device.is_some())
        .max_by_key(|r| (r.device, std::cmp::Reverse(r.rank)))?;
    let largest = top.device?;
    let mut others: Vec<u64> = running
        .iter()
        .filter(|r| r.pid != top.pid)
        .filter_map(|r| r.device)
        .collect();
    let median = median(&mut others)?;
    let rate = top.growth.unwrap_or(0.0);
    let grows_alone = rate >= GROWING_BYTES_PER_S
        && running
            .iter()
            .filter(|r| r.pid != top.pid)
            .all(|r| r.growth.is_some_and(|g| g.abs() <= rate / 10.0));
    Some(Imbalance {
        pid: top.pid,
        rank: top.rank,
        largest,
        median,
        ratio: ratio(largest, median),
        grows_alone,
    })
}

/// The median of `v` (the mean of the middle two when even); `None` when empty.
pub fn median(v: &mut [u64]) -> Option<u64> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        u64::try_from((u128::from(v[n / 2 - 1]) + u128::from(v[n / 2])) / 2).unwrap_or(u64::MAX)
    })
}

/// `largest / median`; infinite over a median of 0.
#[allow(clippy::cast_precision_loss)]
pub fn ratio(largest: u64, median: u64) -> f64 {
    if median == 0 {
        f64::INFINITY
    } else {
        largest as f64 / median as f64
    }
}

#[cfg(test)]
mod tests;
