//! A rank that stops coming to its job's collectives, named live, before any watchdog fires
//! (issue 39): its GPU idle for [`STALL_MS`] while every other rank's GPU is busy as long (NCCL's
//! kernels spin at 100 % waiting in the collective it has not reached), and one more witness that
//! it is the one behind — its probe's report that its main thread has stood at one place (not
//! busy on a CPU: a checkpoint being written moves) or NCCL's RAS counting fewer collectives for
//! it than for the others. The GPUs alone are not enough: rank 0 saving a checkpoint while the
//! others wait in a barrier looks the same on them.

use super::{gpu_name, job_line, own_track, rank_word};

#[cfg(test)]
mod tests;
use crate::model::units::duration_ms;
use crate::model::{Alert, Job, Level, Machine, RankRow};
use crate::sample::{Frame, MainWhere};

pub const STALLED: &str = "rank-stalled";
/// How long the rank's GPU is idle, and the others' busy, before it is said.
pub const STALL_MS: u64 = 20_000;

/// The job's rank that stalls, once per job and rank (`is_new(pid, GPU)`).
pub fn alert(machine: &Machine, job: &Job, at_ms: u64, is_new: super::IsNew) -> Option<Alert> {
    let running: Vec<&RankRow> = job.ranks.iter().filter(|r| r.running()).collect();
    if running.len() < 2 {
        return None;
    }
    let gpus: Vec<&str> = running.iter().map(|r| r.gpu.as_str()).collect();
    let one_gpu_each = (1..gpus.len()).all(|i| !gpus[..i].contains(&gpus[i]));
    if !one_gpu_each {
        return None;
    }
    let idle: Vec<&RankRow> = running
        .iter()
        .copied()
        .filter(|r| {
            machine
                .gpu(&r.gpu)
                .is_some_and(|g| g.idle_for(at_ms) >= STALL_MS)
        })
        .collect();
    let busy: Vec<&RankRow> = running
        .iter()
        .copied()
        .filter(|r| {
            machine
                .gpu(&r.gpu)
                .is_some_and(|g| g.busy_for(at_ms) >= STALL_MS)
        })
        .collect();
    if idle.len() != 1 || busy.len() + 1 != running.len() {
        return None;
    }
    let r = idle[0];
    let place = own_track(machine, r).and_then(|t| t.stuck.as_ref());
    let ras = behind(machine, r);
    if place.is_none() && ras.is_none() {
        return None;
    }
    if !is_new(STALLED, r.pid, &r.gpu) {
        return None;
    }
    let idle_ms = machine.gpu(&r.gpu).map_or(0, |g| g.idle_for(at_ms));
    let others: Vec<String> = busy.iter().map(|b| rank_word(b)).collect();
    let (list, wait) = match others.as_slice() {
        [one] => (one.clone(), "waits"),
        _ => (others.join(", "), "wait"),
    };
    let mut evidence = vec![format!(
        "{} idle for {} while the GPUs of the job's other ranks ({list}) are busy: NCCL's kernels spin while they wait in a collective",
        gpu_name(machine, &r.gpu),
        duration_ms(idle_ms),
    )];
    let mut title = format!(
        "{} (pid {}) has not reached the collective its job's other ranks wait in",
        rank_word(r),
        r.pid
    );
    if let Some(w) = place {
        let frame = user_frame(w);
        title.push_str(&format!(
            ": its main thread has been at {} for {}, its GPU idle",
            frame.map_or_else(|| "one place".into(), Frame::label),
            duration_ms(at_ms.saturating_sub(w.since_ms))
        ));
        let stack: Vec<String> = w.frames.iter().map(Frame::label).collect();
        evidence.push(format!(
            "its probe: the main thread has stood still since {} (innermost first: {})",
            crate::model::units::clock(w.since_ms),
            stack.join(" < ")
        ));
    } else {
        title.push_str(": its GPU idle");
    }
    if let Some(words) = &ras {
        evidence.push(words.clone());
    }
    title.push_str(&format!("; {list} {wait} for it"));
    evidence.push(job_line(job));
    Some(Alert {
        at_ms,
        gpu_uuid: Some(r.gpu.clone()),
        pid: Some(r.pid),
        level: Level::Suspected,
        class: STALLED.into(),
        confidence: Some("likely".into()),
        title,
        evidence,
        remedy: Some(format!(
            "See what {} waits on at that line (a data loader, a file or network read, a lock, a collective only some ranks call). Its peers' NCCL watchdog will abort them when its timeout passes; a longer timeout does not bring a rank that never comes.",
            rank_word(r)
        )),
        job: Some(job.id.clone()),
    })
}

/// The innermost frame of the job's own code (not the standard library's or an installed
/// package's), else the innermost.
fn user_frame(w: &MainWhere) -> Option<&Frame> {
    let library = |f: &&Frame| {
        f.file.contains("/lib/python")
            || f.file.contains("site-packages")
            || f.file.contains("dist-packages")
            || f.file.starts_with('<')
    };
    w.frames
        .iter()
        .find(|f| !library(f))
        .or_else(|| w.frames.first())
}

/// What NCCL's RAS says of the rank, where it counts it behind the others.
fn behind(machine: &Machine, r: &RankRow) -> Option<String> {
    let ras = machine.ras.as_ref()?;
    ras.comms.iter().find_map(|c| {
        let b = c
            .behind()
            .into_iter()
            .find(|b| b.rank.pid == Some(r.pid))?;
        Some(format!(
            "NCCL's RAS: rank {} of communicator {} has launched {} {} operations, the others up to {}",
            b.rank.rank, c.id, b.launched, b.op, b.most
        ))
    })
}
