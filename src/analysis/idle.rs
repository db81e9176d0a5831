//! Another process's idle preallocated pool: a JAX or TensorFlow process holds a pool it sized at
//! start (the allocator probe shows little of it in use; without the probe, the framework and its
//! settings say it preallocated), and a running process never gives such a pool back. Where a
//! GPU is short, or an OOM needed what it holds, that process and its setting are the first cause
//! and the first remedy: restart it without preallocation or with a smaller fraction. It is warned
//! while the GPU is short or filling for the others.

use crate::analysis::context::short_command;
use crate::analysis::filling::time_to_full;
use crate::analysis::growth::fills_gpu;
use crate::analysis::risk::{Risk, figures};
use crate::model::{GpuTrack, Level, Machine, ProcessTrack, processes_on};
use crate::oom::sizes::human;
use crate::sample::Framework;

/// An idle part smaller than this is not worth naming.
const MIN_IDLE: u64 = 1 << 30;
/// "Little in use": at most this share of the pool (per mille).
const IN_USE_PERMILLE: u64 = 250;
/// An unprobed pool is judged on its device memory from this long after its first sample.
const SETTLED_MS: u64 = 10_000;
/// A GPU with less free than this (or 2 % of its memory, whichever is larger) is short.
const SHORT_FREE: u64 = 1 << 30;

/// A live process's preallocated pool and how much of it is idle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Idle {
    pub pid: u32,
    pub command: String,
    pub framework: Framework,
    /// What the process holds: its pool (probe) or its device memory (NVML).
    pub held: u64,
    /// In live buffers, from the probe; `None` without one.
    pub in_use: Option<u64>,
    /// The memory setting in its initial environment that sized the pool ("VAR=value"), if any.
    pub set: Option<String>,
}

impl Idle {
    /// What another process could have had if this pool were not held idle.
    pub fn idle(&self) -> u64 {
        self.held.saturating_sub(self.in_use.unwrap_or(0))
    }

    /// "pid 4242 JAX (python serve.py) holds 59.40 GiB preallocated, 4.00 MiB in use".
    pub fn describe(&self) -> String {
        let cmd = short_command(&self.command);
        let who = if cmd.is_empty() {
            format!("pid {} {}", self.pid, name(self.framework))
        } else {
            format!("pid {} {} ({cmd})", self.pid, name(self.framework))
        };
        let in_use = self.in_use.map_or_else(
            || "in use unknown (no allocator probe)".to_string(),
            |u| format!("{} in use", human(u)),
        );
        format!("{who} holds {} preallocated, {in_use}", human(self.held))
    }

    /// The setting to restart it with: "XLA_PYTHON_CLIENT_PREALLOCATE=false".
    pub fn setting(&self) -> &'static str {
        match self.framework {
            Framework::Tensorflow => "TF_FORCE_GPU_ALLOW_GROWTH=true",
            _ => "XLA_PYTHON_CLIENT_PREALLOCATE=false",
        }
    }

    /// The setting that frees the GPU, for this framework, naming what is set now.
    pub fn remedy(&self) -> String {
        let now = self
            .set
            .as_ref()
            .map_or_else(String::new, |s| format!(" (now {s})"));
        let fix = match self.framework {
            Framework::Tensorflow => format!(
                "Restart pid {} with TF_FORCE_GPU_ALLOW_GROWTH=true{now} so its pool holds only what it uses",
                self.pid
            ),
            _ => format!(
                "Restart pid {} with XLA_PYTHON_CLIENT_PREALLOCATE=false, or a smaller XLA_PYTHON_CLIENT_MEM_FRACTION{now}, so its pool holds only what it uses",
                self.pid
            ),
        };
        let holds = match self.in_use {
            Some(_) => format!("it holds {} it does not use", human(self.idle())),
            None => format!(
                "it holds {} preallocated (how much is in use is unknown without the allocator probe)",
                human(self.held)
            ),
        };
        format!(
            "{fix}: {holds}, and a running {} process never gives its pool back.",
            name(self.framework)
        )
    }
}

fn name(fw: Framework) -> &'static str {
    match fw {
        Framework::Tensorflow => "TensorFlow",
        _ => "JAX",
    }
}

/// The variables that size or switch off a BFC pool's preallocation.
fn vars(fw: Framework) -> &'static [&'static str] {
    match fw {
        Framework::Tensorflow => &["TF_FORCE_GPU_ALLOW_GROWTH"],
        _ => &[
            "XLA_PYTHON_CLIENT_PREALLOCATE",
            "XLA_CLIENT_MEM_FRACTION",
            "XLA_PYTHON_CLIENT_MEM_FRACTION",
            "XLA_PYTHON_CLIENT_ALLOCATOR",
        ],
    }
}

/// Whether the process's settings leave preallocation on (unknown settings: the default, on).
fn preallocates(t: &ProcessTrack, fw: Framework) -> bool {
    let Some(s) = t.sample.settings.value() else {
        return true;
    };
    let get = |k: &str| s.get(k).map(|v| v.trim().to_ascii_lowercase());
    match fw {
        Framework::Tensorflow => get("TF_FORCE_GPU_ALLOW_GROWTH").as_deref() != Some("true"),
        _ => {
            !matches!(
                get("XLA_PYTHON_CLIENT_PREALLOCATE").as_deref(),
                Some("false" | "0")
            ) && get("XLA_PYTHON_CLIENT_ALLOCATOR").as_deref() != Some("platform")
        }
    }
}

/// Whether an unprobed process's device memory has stayed where its first seconds put it (within
/// 1/16): a pool sized at start, not memory that grew with use.
fn sized_at_start(t: &ProcessTrack) -> bool {
    let settled = t.first_seen_ms.saturating_add(SETTLED_MS);
    let mut after = t
        .history
        .iter()
        .filter(|p| p.at_ms >= settled)
        .filter_map(|p| p.value);
    let Some(first) = after.next() else {
        return false;
    };
    let (low, high) = after.fold((first, first), |(l, h), v| (l.min(v), h.max(v)));
    high.saturating_sub(low) <= high / 16
}

/// The idle preallocated pool of a live process, if it holds one worth naming.
pub fn idle_pool(t: &ProcessTrack) -> Option<Idle> {
    if t.exited_ms.is_some() {
        return None;
    }
    let probed = t.sample.pool.value();
    let fw = probed
        .map(|p| p.framework)
        .or_else(|| t.sample.framework.get())
        .filter(|f| f.keeps_its_pool())?;
    let (held, in_use) = match probed {
        Some(p) => {
            let (held, used) = (p.reserved?, p.allocated?);
            if used.saturating_mul(1000) > held.saturating_mul(IN_USE_PERMILLE) {
                return None;
            }
            (held, Some(used))
        }
        None if preallocates(t, fw) && sized_at_start(t) => (t.sample.device_memory.get()?, None),
        None => return None,
    };
    let set = t.sample.settings.value().and_then(|s| {
        let named: Vec<String> = vars(fw)
            .iter()
            .filter_map(|k| Some(format!("{k}={}", s.get(*k)?)))
            .collect();
        (!named.is_empty()).then(|| named.join(" "))
    });
    let idle = Idle {
        pid: t.sample.pid,
        command: t.sample.command.value().cloned().unwrap_or_default(),
        framework: fw,
        held,
        in_use,
        set,
    };
    (idle.idle() >= MIN_IDLE).then_some(idle)
}

/// The largest idle pool on GPU `uuid` of a process other than `pid` that is alive at `when_ms`
/// and would have covered `need` bytes.
pub fn beside(machine: &Machine, uuid: &str, pid: u32, need: u64, when_ms: u64) -> Option<Idle> {
    processes_on(&machine.processes, uuid)
        .filter(|t| t.sample.pid != pid && t.first_seen_ms <= when_ms)
        .filter_map(idle_pool)
        .filter(|i| i.idle() >= need)
        .max_by_key(Idle::idle)
}

fn short(g: &GpuTrack) -> Option<u64> {
    let m = g.sample.memory.value()?;
    (m.free < SHORT_FREE.max(m.total / 50)).then_some(m.free)
}

/// A process's idle preallocated pool while its GPU is short for the other processes on it.
/// A process's idle preallocated pool while its GPU is short for the other processes on it, or
/// filling (`filling`: the GPU's used memory, or another process's own growth, reaches its free
/// memory within the warning horizon). Only a probed pool is warned: without the probe, how much
/// of it is in use is not known.
pub fn risk(
    t: &ProcessTrack,
    g: &GpuTrack,
    on_gpu: &[&ProcessTrack],
    filling: &dyn Fn() -> bool,
) -> Option<Risk> {
    let idle = idle_pool(t).filter(|i| i.in_use.is_some())?;
    let others: Vec<String> = on_gpu
        .iter()
        .filter(|o| o.exited_ms.is_none() && o.sample.pid != idle.pid)
        .map(|o| format!("pid {}", o.sample.pid))
        .collect();
    if others.is_empty() {
        return None;
    }
    let free = g.sample.memory.value()?.free;
    let state = match short(g) {
        Some(_) => format!("has {} free for {}", human(free), others.join(", ")),
        None if filling() => format!("fills ({} free) for {}", human(free), others.join(", ")),
        None => return None,
    };
    let mut evidence = vec![
        idle.describe(),
        format!(
            "a running {} process never gives its pool back: only a restart frees it",
            name(idle.framework)
        ),
        match &idle.set {
            Some(s) => format!("set in its initial environment: {s}"),
            None => "no preallocation setting in its initial environment: the default, on".into(),
        },
    ];
    if let Some(p) = t.sample.pool.value() {
        evidence.extend(figures(p));
    }
    Some(Risk {
        class: "idle-preallocation",
        pid: Some(idle.pid),
        gpu: t.sample.gpu_uuid.clone(),
        level: Level::Suspected,
        confidence: None,
        title: format!(
            "pid {} {} holds {} idle in its preallocated pool while GPU{} {state}",
            idle.pid,
            name(idle.framework),
            human(idle.idle()),
            g.sample.index,
        ),
        evidence,
        remedy: idle.remedy(),
    })
}

/// The idle-pool risks of every GPU on the machine at `at_ms`.
pub fn risks(machine: &Machine, at_ms: u64) -> Vec<Risk> {
    let mut out = Vec::new();
    for g in machine.gpus.values() {
        let on_gpu: Vec<&ProcessTrack> = processes_on(&machine.processes, &g.sample.uuid).collect();
        // Asked only where an idle pool and another process share a GPU that is not short yet.
        let filling = || {
            time_to_full(machine, g, &|| true).is_some()
                || on_gpu.iter().any(|o| {
                    o.exited_ms.is_none()
                        && o.sample
                            .pool
                            .value()
                            .is_some_and(|p| fills_gpu(o, p, g, at_ms))
                })
        };
        out.extend(on_gpu.iter().filter_map(|t| risk(t, g, &on_gpu, &filling)));
    }
    out
}

#[cfg(test)]
mod tests;
