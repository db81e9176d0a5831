//! What the machine knew about a failing process when its failure was read: which GPU the message's
//! device ordinal is (through the process's `CUDA_VISIBLE_DEVICES`), that GPU's memory, the
//! process's settings and device memory, and the other processes holding the GPU.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{Machine, ProcessTrack};
use crate::oom::failure::Failure;
use crate::oom::sizes::human;
use crate::sample::{Framework, Pool};

/// A GPU's memory at the failure, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuAt {
    pub index: u32,
    pub total: u64,
    pub used: u64,
    pub free: u64,
}

/// Another process on the failing GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Other {
    pub pid: u32,
    pub command: String,
    pub bytes: u64,
}

impl Other {
    /// "pid 414 python3 train.py (59.99 GiB)": the pid, a short command, the memory.
    pub fn describe(&self) -> String {
        let cmd = short_command(&self.command);
        let size = human(self.bytes);
        if cmd.is_empty() {
            format!("pid {} ({size})", self.pid)
        } else {
            format!("pid {} {cmd} ({size})", self.pid)
        }
    }
}

/// A command line cut to what tells processes apart: the program's name, and for an interpreter
/// the script's name ("python3 /srv/x/train.py --lr 1" -> "python3 train.py").
pub fn short_command(command: &str) -> String {
    const MAX: usize = 32;
    let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
    let mut words = command.split_whitespace();
    let Some(program) = words.next().map(base) else {
        return String::new();
    };
    let interpreter = [
        "python", "bash", "sh", "node", "ruby", "perl", "julia", "Rscript",
    ]
    .iter()
    .any(|i| program.starts_with(i));
    let mut flag = None;
    let script = words
        .find(|w| {
            let option = w.starts_with('-');
            if option {
                flag = matches!(*w, "-c" | "-m").then_some(*w);
            }
            !option
        })
        .filter(|_| interpreter);
    let out = match (script, flag) {
        (Some(s), Some(f)) => format!("{program} {f} {s}"),
        (Some(s), None) => format!("{program} {}", base(s)),
        (None, _) => program,
    };
    if out.chars().count() > MAX {
        out.chars().take(MAX - 1).chain(['…']).collect()
    } else {
        out
    }
}

/// The evidence from outside the message; empty for `gpumon explain` (no machine).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Context {
    pub gpu_uuid: Option<String>,
    pub gpu: Option<GpuAt>,
    /// The failing process's device memory (NVML) before the failure.
    pub process_memory: Option<u64>,
    /// Its initial environment's memory settings; `None` when unknown.
    pub settings: Option<BTreeMap<String, String>>,
    pub framework: Option<Framework>,
    /// Largest first.
    pub others: Vec<Other>,
    /// Its allocator probe's last figures before the failure, when it was probed.
    pub pool: Option<Pool>,
}

impl Context {
    pub fn from_machine(f: &Failure, machine: &Machine) -> Context {
        let tracks: Vec<&ProcessTrack> = f.pid.map_or_else(Vec::new, |pid| {
            machine
                .processes
                .values()
                .filter(|t| t.sample.pid == pid)
                .collect()
        });
        let settings = tracks
            .iter()
            .find_map(|t| t.sample.settings.value().cloned());
        let framework = tracks.iter().find_map(|t| t.sample.framework.get());
        let mut ctx = Context {
            settings,
            framework,
            ..Context::default()
        };
        let Some(uuid) = device_uuid(f, &tracks, ctx.settings.as_ref(), machine) else {
            return ctx;
        };
        let track = tracks.iter().find(|t| t.sample.gpu_uuid == uuid);
        // An exited process's failure happened while it still held its memory; one read after
        // its time (a log read behind its writer) is judged by the readings of that time.
        let when = track.map_or(machine.now_ms, |t| t.last_seen_ms);
        let when = f.timing.map_or(when, |_| when.min(f.at_ms));
        ctx.pool = track.and_then(|t| t.sample.pool.value().or(t.prev_pool.as_ref()).cloned());
        ctx.process_memory = track.and_then(|t| {
            t.history
                .iter()
                .rev()
                .find_map(|p| p.value.filter(|_| p.at_ms <= when))
        });
        ctx.gpu = machine.gpus.get(&uuid).and_then(|g| {
            let m = g.sample.memory.value()?;
            let used = g
                .used
                .iter()
                .rev()
                .find(|p| p.at_ms <= when)
                .and_then(|p| p.value)
                .unwrap_or(m.used);
            let reserved = m.reserved.get().unwrap_or(0);
            Some(GpuAt {
                index: g.sample.index,
                total: m.total,
                used,
                free: m.total.saturating_sub(used).saturating_sub(reserved),
            })
        });
        ctx.others = machine
            .processes
            .values()
            .filter(|t| t.sample.gpu_uuid == uuid && Some(t.sample.pid) != f.pid)
            .filter(|t| t.exited_ms.is_none_or(|e| e > when))
            .filter_map(|t| {
                Some(Other {
                    pid: t.sample.pid,
                    command: t.sample.command.value().cloned().unwrap_or_default(),
                    bytes: t.sample.device_memory.get()?,
                })
            })
            .collect();
        ctx.others
            .sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.pid.cmp(&b.pid)));
        ctx.gpu_uuid = Some(uuid);
        ctx
    }
}

fn device_uuid(
    f: &Failure,
    tracks: &[&ProcessTrack],
    settings: Option<&BTreeMap<String, String>>,
    machine: &Machine,
) -> Option<String> {
    if let (Some(ord), Some(s)) = (f.numbers.device, settings)
        && let Some(u) = map_ordinal(
            ord,
            s.get("CUDA_VISIBLE_DEVICES").map(String::as_str),
            machine,
        )
    {
        return Some(u);
    }
    let on: BTreeSet<&String> = tracks.iter().map(|t| &t.sample.gpu_uuid).collect();
    if on.len() == 1 {
        return on.into_iter().next().cloned();
    }
    if machine.gpus.len() == 1 {
        return machine.gpus.keys().next().cloned();
    }
    None
}

/// The GPU a process-local CUDA ordinal names: `CUDA_VISIBLE_DEVICES` lists NVML indices or
/// `GPU-<uuid>` prefixes and stops at the first entry it cannot read; unset means all, in order.
pub fn map_ordinal(ordinal: u32, visible: Option<&str>, machine: &Machine) -> Option<String> {
    let by_index = |i: u32| {
        machine
            .gpus
            .values()
            .find(|g| g.sample.index == i)
            .map(|g| g.sample.uuid.clone())
    };
    let Some(visible) = visible else {
        return by_index(ordinal);
    };
    let entry = visible
        .split(',')
        .map(str::trim)
        .take_while(|e| {
            !e.is_empty()
                && (e.bytes().all(|b| b.is_ascii_digit())
                    || e.starts_with("GPU-")
                    || e.starts_with("MIG-"))
        })
        .nth(usize::try_from(ordinal).ok()?)?;
    if let Ok(i) = entry.parse() {
        return by_index(i);
    }
    let prefix = entry.strip_prefix("GPU-")?.to_ascii_lowercase();
    let mut hits = machine.gpus.keys().filter(|u| {
        u.get(4..)
            .is_some_and(|rest| rest.to_ascii_lowercase().starts_with(&prefix))
    });
    match (hits.next(), hits.next()) {
        (Some(u), None) => Some(u.clone()),
        _ => None,
    }
}
