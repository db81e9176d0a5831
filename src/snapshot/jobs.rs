//! A snapshot's `jobs`: the distributed jobs among its processes (`model::jobs`), each with its
//! ranks side by side and the largest rank against the median, and their part of the text form.
//! Derived, like the machine's own jobs: `to_machine` groups the processes' ranks again.

use serde::{Deserialize, Serialize};

use super::lines::{Out, fit, size};
use super::{Snapshot, time_ms, time_s};
use crate::model::jobs::{Imbalance, Job, RankRow};
use crate::model::units;
use crate::sample::Launcher;

/// One distributed job: its ranks on this machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobDoc {
    /// The launcher's id of the job, the same on every rank and host (`Rank::job`).
    pub id: String,
    pub launcher: Launcher,
    /// The world size its ranks say (the most common value; `problems` says when they differ).
    pub world_size: Option<u32>,
    /// One a process, by rank (an untrusted rank last), then pid.
    pub ranks: Vec<RankDoc>,
    /// UUIDs of the GPUs its running ranks hold memory on.
    pub gpus: Vec<String>,
    /// Device memory of its running ranks, on every GPU each is on (known readings).
    pub device_total: u64,
    pub problems: Vec<String>,
    /// The running rank holding the most against the median (two running ranks with readings).
    pub imbalance: Option<ImbalanceDoc>,
}

/// One rank of a job; a `null` reading's reason is in the process's own `unavailable`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankDoc {
    pub pid: u32,
    pub started_at: Option<String>,
    /// `null`: it could not be trusted, or another running process claims the same rank.
    pub rank: Option<u32>,
    pub local_rank: Option<u32>,
    pub node: Option<u32>,
    /// Its own GPU: where it holds the most device memory.
    pub gpu_uuid: String,
    /// On every GPU it is on together.
    pub device_memory: Option<u64>,
    /// What it holds on other GPUs than its own (a second context).
    pub elsewhere: Vec<ElsewhereDoc>,
    /// Its framework pool on its own GPU (the probe's).
    pub pool_allocated: Option<u64>,
    pub pool_reserved: Option<u64>,
    /// Device memory growth on its own GPU over the last 10 s, bytes a second.
    pub growth_bytes_per_s: Option<i64>,
    /// Whether its probe saw a NCCL process group (`null`: not probed, or no group yet).
    pub nccl: Option<bool>,
    /// `null`: still running.
    pub exited_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ElsewhereDoc {
    pub gpu_uuid: String,
    pub device_memory: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImbalanceDoc {
    pub pid: u32,
    pub rank: Option<u32>,
    pub largest: u64,
    pub median: u64,
    /// `largest / median` to three decimals; `null` when the median is 0.
    pub ratio: Option<f64>,
    /// It grows (1 MiB/s or more) while every other running rank is flat beside it.
    pub grows_alone: bool,
}

/// The machine's jobs as documents.
pub(super) fn docs(jobs: &[Job]) -> Vec<JobDoc> {
    jobs.iter().map(doc).collect()
}

fn doc(j: &Job) -> JobDoc {
    JobDoc {
        id: j.id.clone(),
        launcher: j.launcher,
        world_size: j.world_size,
        ranks: j.ranks.iter().map(rank).collect(),
        gpus: j.gpus.clone(),
        device_total: j.device,
        problems: j.problems.clone(),
        imbalance: j.imbalance.as_ref().map(imbalance),
    }
}

#[allow(clippy::cast_possible_truncation)]
fn rank(r: &RankRow) -> RankDoc {
    RankDoc {
        pid: r.pid,
        started_at: r.start_time.map(time_s),
        rank: r.rank,
        local_rank: r.local_rank,
        node: r.node,
        gpu_uuid: r.gpu.clone(),
        device_memory: r.device,
        elsewhere: r
            .elsewhere
            .iter()
            .map(|(gpu_uuid, device_memory)| ElsewhereDoc {
                gpu_uuid: gpu_uuid.clone(),
                device_memory: *device_memory,
            })
            .collect(),
        pool_allocated: r.allocated,
        pool_reserved: r.reserved,
        growth_bytes_per_s: r.growth.map(|g| g.round() as i64),
        nccl: r.nccl,
        exited_at: r.exited_ms.map(time_ms),
    }
}

fn imbalance(i: &Imbalance) -> ImbalanceDoc {
    ImbalanceDoc {
        pid: i.pid,
        rank: i.rank,
        largest: i.largest,
        median: i.median,
        ratio: i
            .ratio
            .is_finite()
            .then(|| (i.ratio * 1000.0).round() / 1000.0),
        grows_alone: i.grows_alone,
    }
}

/// "0", or "?" for a rank that could not be trusted.
pub fn rank_label(rank: Option<u32>) -> String {
    rank.map_or_else(|| "?".to_string(), |r| r.to_string())
}

/// The jobs section of the text form: per job a line, then its ranks side by side.
pub(super) fn text(o: &mut Out, s: &Snapshot) {
    if s.jobs.is_empty() {
        return;
    }
    o.blank();
    o.row("Jobs (distributed; ranks side by side, x exited)");
    let gpu = |uuid: &str| s.gpu(uuid).map_or("?".into(), |g| g.index.to_string());
    for j in &s.jobs {
        let running = j.ranks.iter().filter(|r| r.exited_at.is_none()).count();
        let world = j.world_size.map_or_else(
            || "world size unknown".into(),
            |w| format!("world size {w}"),
        );
        let gpus: Vec<String> = j.gpus.iter().map(|u| gpu(u)).collect();
        let on = if gpus.is_empty() {
            String::new()
        } else {
            format!(", on GPU {}", gpus.join(", "))
        };
        o.para(0, &format!("{} ({})", j.id, j.launcher.label()));
        o.para(
            2,
            &format!(
                "{world}; {running} running rank(s) here{on}; device {}",
                size(Some(j.device_total)),
            ),
        );
        o.row(&format!(
            "  {:>5} {:>5} {:>4} {:<7} {:<3} {:>7} {:>7} {:>7} {:>8} {:<4}",
            "RANK", "LOCAL", "NODE", "PID", "GPU", "DEVICE", "ALLOC", "POOL", "GROW/10s", "NCCL"
        ));
        for r in &j.ranks {
            o.row(&row(r, &gpu(&r.gpu_uuid)));
        }
        for r in &j.ranks {
            for e in &r.elsewhere {
                o.para(
                    2,
                    &format!(
                        "rank {} (pid {}) also holds {} on GPU {}",
                        rank_label(r.rank),
                        r.pid,
                        size(e.device_memory),
                        gpu(&e.gpu_uuid)
                    ),
                );
            }
        }
        if let Some(i) = &j.imbalance {
            o.para(2, &imbalance_text(i));
        }
        for p in &j.problems {
            o.para(2, &format!("problem: {p}"));
        }
    }
}

/// One rank's row, within 80 columns.
fn row(r: &RankDoc, gpu: &str) -> String {
    let opt = |v: Option<u32>| v.map_or_else(|| "-".to_string(), |n| n.to_string());
    #[allow(clippy::cast_precision_loss)]
    let growth = r
        .growth_bytes_per_s
        .map_or_else(|| "n/a".to_string(), |g| units::growth(g as f64));
    let nccl = match r.nccl {
        Some(true) => "yes",
        Some(false) => "no",
        None => "-",
    };
    format!(
        "{} {:>5} {:>5} {:>4} {:<7} {:<3} {:>7} {:>7} {:>7} {:>8} {:<4}",
        if r.exited_at.is_some() { 'x' } else { ' ' },
        rank_label(r.rank),
        opt(r.local_rank),
        opt(r.node),
        r.pid,
        fit(gpu, 3),
        size(r.device_memory),
        size(r.pool_allocated),
        size(r.pool_reserved),
        growth,
        nccl,
    )
}

/// "largest: rank 0 (pid 1446) 11.0G, 1.22x the median 9.0G; it grows while the others are flat".
pub fn imbalance_text(i: &ImbalanceDoc) -> String {
    let ratio = i.ratio.map_or_else(
        || "against a median of".to_string(),
        |r| format!("{r:.2}x the median"),
    );
    format!(
        "largest: rank {} (pid {}) {}, {ratio} {}{}",
        rank_label(i.rank),
        i.pid,
        size(Some(i.largest)),
        size(Some(i.median)),
        if i.grows_alone {
            "; it grows while the others are flat"
        } else {
            ""
        }
    )
}
