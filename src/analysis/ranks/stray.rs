//! Ranks that also hold memory on another rank's GPU: a second CUDA context there, and what it
//! allocated (`torch.load` without `map_location` loads onto the GPU the tensors were saved from,
//! usually rank 0's; no `torch.cuda.set_device` before the process group starts puts every rank's
//! first context on the first visible GPU). Measured on 2 H100s: rank 1's PID appeared on GPU0
//! with 774 MiB beside its 1924 MiB on GPU1 (`docs/guide/alerts.md`).
//!
//! What tells it from a process that uses two GPUs on purpose: it is a rank of a job with another
//! running rank whose own GPU that is (a model split over GPUs no other rank owns is not named);
//! the owner of that GPU holds nothing on the straying rank's GPU (ranks that each span the same
//! GPUs are a layout, not a stray); and it has held that memory for `SETTLE_MS` (ranks starting a
//! second apart are not judged on their first context). One alert for the job, naming each rank.

use super::{gpu_name, job_line, who};
use crate::model::{Alert, Job, Level, Machine, ProcKey, RankRow};
use crate::oom::sizes::human;
use crate::sample::Framework;

pub const EXTRA_CONTEXT: &str = "rank-extra-context";
/// A rank's memory on another rank's GPU is judged once it has been there this long.
const SETTLE_MS: u64 = 20_000;

/// One rank's memory on another rank's GPU.
struct Stray<'a> {
    row: &'a RankRow,
    gpu: &'a str,
    bytes: u64,
    owners: Vec<&'a RankRow>,
}

/// The job's ranks on another rank's GPU, in one alert, once per job.
pub fn alert(machine: &Machine, job: &Job, at_ms: u64) -> Option<Alert> {
    let running: Vec<&RankRow> = job.ranks.iter().filter(|r| r.running()).collect();
    if running.len() < 2 {
        return None;
    }
    let mut strays: Vec<Stray> = Vec::new();
    for r in &running {
        for (gpu, bytes) in &r.elsewhere {
            let Some(bytes) = bytes.filter(|b| *b > 0) else {
                continue;
            };
            let owners: Vec<&RankRow> = running
                .iter()
                .filter(|o| o.pid != r.pid && o.gpu == *gpu)
                .copied()
                .collect();
            let spans = |o: &&RankRow| o.elsewhere.iter().any(|(u, _)| *u == r.gpu);
            if owners.is_empty() || owners.iter().any(spans) || !settled(machine, r, gpu, at_ms) {
                continue;
            }
            strays.push(Stray {
                row: r,
                gpu,
                bytes,
                owners,
            });
        }
    }
    if strays.is_empty() || raised(machine, &job.id) {
        return None;
    }
    Some(words(machine, job, &strays, at_ms))
}

/// Whether the rank's track on `gpu` has run there for `SETTLE_MS`.
fn settled(machine: &Machine, r: &RankRow, gpu: &str, at_ms: u64) -> bool {
    let key = ProcKey {
        gpu_uuid: gpu.to_string(),
        pid: r.pid,
        start_time: r.start_time,
    };
    machine.processes.get(&key).is_some_and(|t| {
        t.exited_ms.is_none() && t.first_seen_ms.saturating_add(SETTLE_MS) <= at_ms
    })
}

fn raised(machine: &Machine, job: &str) -> bool {
    machine
        .alerts
        .iter()
        .any(|a| a.class == EXTRA_CONTEXT && a.job.as_deref() == Some(job))
}

/// "rank 0's", "ranks 0 and 2's".
fn owners_word(owners: &[&RankRow]) -> String {
    let names: Vec<String> = owners
        .iter()
        .map(|o| {
            o.rank
                .map_or_else(|| format!("pid {}", o.pid), |n| n.to_string())
        })
        .collect();
    match names.as_slice() {
        [one] if owners[0].rank.is_some() => format!("rank {one}'s"),
        [one] => format!("{one}'s"),
        _ => format!("ranks {}'", names.join(", ")),
    }
}

fn words(machine: &Machine, job: &Job, strays: &[Stray], at_ms: u64) -> Alert {
    let first = &strays[0];
    let gpu = gpu_name(machine, first.gpu);
    let cause = "a second CUDA context there (torch.load without map_location, or no torch.cuda.set_device before init_process_group)";
    let title = match strays {
        [s] => format!(
            "{} also holds {} on {gpu}, {} GPU: {cause}",
            who(s.row),
            human(s.bytes),
            owners_word(&s.owners)
        ),
        _ => {
            let total: u64 = strays.iter().map(|s| s.bytes).sum();
            let mut ranks: Vec<String> = strays
                .iter()
                .map(|s| {
                    s.row
                        .rank
                        .map_or_else(|| format!("pid {}", s.row.pid), |n| n.to_string())
                })
                .collect();
            ranks.dedup();
            let mut gpus: Vec<&str> = strays.iter().map(|s| s.gpu).collect();
            gpus.sort_unstable();
            gpus.dedup();
            let place = if gpus.len() == 1 {
                format!("{gpu}, {} GPU", owners_word(&first.owners))
            } else {
                "other ranks' GPUs".to_string()
            };
            format!(
                "{} ranks ({}) also hold {} together on {place}: {cause}",
                ranks.len(),
                ranks.join(", "),
                human(total)
            )
        }
    };
    let mut evidence = Vec::new();
    for s in strays {
        let own = s
            .row
            .device
            .map(|all| all.saturating_sub(s.row.elsewhere.iter().filter_map(|e| e.1).sum()));
        evidence.push(format!(
            "{} holds {} on {}, {} GPU, beside {} on its own {}",
            who(s.row),
            human(s.bytes),
            gpu_name(machine, s.gpu),
            owners_word(&s.owners),
            own.map_or_else(|| "n/a".to_string(), human),
            gpu_name(machine, &s.row.gpu)
        ));
        if let Some(reserved) = s.row.reserved {
            evidence.push(format!(
                "its allocator probe reads its pool on its own GPU only ({} reserved there): this memory is outside it",
                human(reserved)
            ));
        }
    }
    let mut owners: Vec<&RankRow> = strays.iter().flat_map(|s| s.owners.clone()).collect();
    owners.sort_by_key(|o| o.pid);
    owners.dedup_by_key(|o| o.pid);
    for o in owners {
        evidence.push(format!(
            "{}, whose GPU that is, holds nothing on the straying ranks' GPUs: not a layout where every rank spans the same GPUs",
            who(o)
        ));
    }
    evidence.push(job_line(job));
    if let Some(m) = machine.gpu(first.gpu).and_then(|g| g.sample.memory.value()) {
        evidence.push(format!("{gpu} free now: {}", human(m.free)));
    }
    let torch = strays.iter().all(|s| {
        let key = ProcKey {
            gpu_uuid: s.row.gpu.clone(),
            pid: s.row.pid,
            start_time: s.row.start_time,
        };
        machine
            .processes
            .get(&key)
            .and_then(|t| t.sample.framework.get())
            .is_none_or(|f| f == Framework::Pytorch)
    });
    Alert {
        at_ms,
        gpu_uuid: Some(first.gpu.to_string()),
        pid: None,
        level: Level::Suspected,
        class: EXTRA_CONTEXT.into(),
        confidence: None,
        title,
        evidence,
        remedy: Some(remedy(torch)),
        job: Some(job.id.clone()),
    }
}

fn remedy(torch: bool) -> String {
    if torch {
        "In each rank, call torch.cuda.set_device(local_rank) before init_process_group (or pass it device_id=torch.device(\"cuda\", local_rank)), and load checkpoints with torch.load(path, map_location=f\"cuda:{local_rank}\") or map_location=\"cpu\": each rank then keeps to its own GPU and the memory above is given back.".into()
    } else {
        "Make each rank use only its own GPU from its start: set CUDA_VISIBLE_DEVICES to its local rank (or the framework's own device selection, e.g. JAX_LOCAL_DEVICE_IDS) before anything touches a GPU, and load checkpoints to the host or to that GPU.".into()
    }
}

#[cfg(test)]
mod tests;
