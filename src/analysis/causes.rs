//! The cause an OOM's first line and first remedy name, in order: the memory it needed sitting
//! idle in another process's preallocated pool (that process and its setting, `idle.rs`), then a
//! leak that reached the limit (with the probe: allocated + stranded climbed with nothing
//! released; without it: the process's device memory did, NVML alone), then a need that grew
//! every step over flat allocated (`peaks.rs`), then the class's own.

use crate::analysis::classify::{Class, Verdict};
use crate::analysis::context::Context;
use crate::analysis::growth::{self, Climb};
use crate::analysis::idle::{self, Idle};
use crate::model::units::{duration_ms, rate};
use crate::model::{Machine, ProcessTrack};
use crate::oom::failure::Failure;
use crate::oom::sizes::human;

/// A climb of device memory smaller than this (or than `MIN_RISE_PERMILLE` of the GPU) says
/// nothing of a leak.
const MIN_RISE: u64 = 256 << 20;
const MIN_RISE_PERMILLE: u64 = 30;
/// The climb must reach the failure: its last reading at most this long before it.
const RECENT_MS: u64 = 10_000;

/// A leak that ended in the failure, and what saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Leak {
    pub climb: Climb,
    /// `true`: the allocator probe's allocated + stranded; `false`: NVML's device memory.
    pub probed: bool,
}

impl Leak {
    pub fn evidence(&self) -> String {
        let c = &self.climb;
        let what = if self.probed {
            "its allocated + stranded memory"
        } else {
            "its device memory (NVML; no allocator probe)"
        };
        format!(
            "a leak: {what} rose from {} to {} over {} ({}) with nothing released",
            human(c.from),
            human(c.to),
            duration_ms(c.span_ms),
            rate(c.rate)
        )
    }

    pub fn remedy(&self, pid: u32) -> String {
        let r = growth::leak_remedy(pid);
        if self.probed {
            r
        } else {
            format!(
                "{r} (Without the allocator probe a cache that grows with each step's peak looks the same: `gpumon run` tells them apart.)"
            )
        }
    }
}

fn tracks<'a>(f: &Failure, machine: &'a Machine) -> impl Iterator<Item = &'a ProcessTrack> {
    let pid = f.pid;
    machine
        .processes
        .values()
        .filter(move |t| Some(t.sample.pid) == pid)
}

/// The leak a failure ended: a limit reached (its own or the GPU's) by memory that climbed with
/// nothing released. A probed process is judged on its probe's figures only (its device memory
/// also holds its cache); an unprobed one on its device memory, up to the failure.
pub fn leaked(f: &Failure, v: &Verdict, ctx: &Context, machine: &Machine) -> Option<Leak> {
    if !matches!(v.class, Class::PoolLimit | Class::DeviceFull) {
        return None;
    }
    let on_gpu = |t: &&ProcessTrack| {
        ctx.gpu_uuid
            .as_ref()
            .is_none_or(|u| *u == t.sample.gpu_uuid)
    };
    let t = tracks(f, machine).find(on_gpu)?;
    if let Some(h) = t.pool_history.as_ref() {
        return Some(Leak {
            climb: growth::climb(h, f.at_ms)?,
            probed: true,
        });
    }
    let series: Vec<(u64, u64)> = t
        .history
        .iter()
        .filter(|p| p.at_ms <= f.at_ms)
        .filter_map(|p| Some((p.at_ms, p.value?)))
        .collect();
    let last = series.last()?.0;
    if f.at_ms.saturating_sub(last) > RECENT_MS {
        return None;
    }
    let c = growth::climb_in(&series, last)?;
    let total = ctx.gpu.map_or(0, |g| g.total);
    let rise = c.to.saturating_sub(c.from);
    (rise >= MIN_RISE.max(total / 1000 * MIN_RISE_PERMILLE)).then_some(Leak {
        climb: c,
        probed: false,
    })
}

/// Another process's idle preallocated pool on the failing GPU that held what the request
/// needed, for a failure of the GPU being full.
pub fn idle_beside(f: &Failure, v: &Verdict, ctx: &Context, machine: &Machine) -> Option<Idle> {
    if v.class != Class::DeviceFull {
        return None;
    }
    let uuid = ctx.gpu_uuid.as_deref()?;
    let need = f.numbers.request.map_or(1, |r| r.bytes);
    idle::beside(machine, uuid, f.pid?, need, f.at_ms)
}

/// The growing need a failure of the pool's or the GPU's limit ended (its probe's peak or its
/// flushes), in words.
pub fn peaked(f: &Failure, v: &Verdict, ctx: &Context, machine: &Machine) -> Option<String> {
    if !matches!(v.class, Class::PoolLimit | Class::DeviceFull) {
        return None;
    }
    let on_gpu = |t: &&ProcessTrack| {
        ctx.gpu_uuid
            .as_ref()
            .is_none_or(|u| *u == t.sample.gpu_uuid)
    };
    let t = tracks(f, machine).find(on_gpu)?;
    crate::analysis::peaks::grew_before(t.pool_history.as_ref()?, f.at_ms)
}

#[cfg(test)]
mod tests;
