//! The cause an OOM's first line and first remedy name, in order: the memory it needed sitting
//! idle in another process's preallocated pool (that process and its setting, `idle.rs`), then a
//! leak that reached the limit (with the probe: allocated + stranded, or allocated's floor,
//! climbed with nothing released; without it: the process's device memory did, NVML alone), then
//! a need that grew every step over flat allocated (`peaks.rs`), then the class's own.
//!
//! A leak first, even where the message says fragmentation: when allocated's floor climbed into
//! the failure (fast, or a slow trend) by more than what sat stranded at it, the kept blocks are
//! what filled the pool, and the memory stranded between them would only have bought the time it
//! lasts at the leak's rate (`leak_first`). Without the probe, the device memory's climb less
//! what the message says is stranded stands for what was kept.

use crate::analysis::classify::{Class, Verdict};
use crate::analysis::context::Context;
use crate::analysis::growth::slow::{SETTLE_MS, trend};
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

/// What a leak was seen in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// The allocator probe's allocated + stranded memory.
    Unreleasable,
    /// The floor of the probe's allocated memory (its lowest readings, through its steps' noise).
    Floor,
    /// NVML's device memory (no probe).
    Device,
}

/// A leak that ended in the failure, and what saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Leak {
    pub climb: Climb,
    pub seen: Seen,
}

impl Leak {
    pub fn probed(&self) -> bool {
        self.seen != Seen::Device
    }

    /// Its rate as a person says it: per second for a fast one, per minute or hour for a slow
    /// one ("+195M/s", "156 MiB/min").
    pub fn rate_words(&self) -> String {
        if self.climb.rate >= f64::from(10u32 << 20) {
            rate(self.climb.rate)
        } else {
            growth::slow::per_time(self.climb.rate)
        }
    }

    pub fn evidence(&self) -> String {
        let c = &self.climb;
        let what = match self.seen {
            Seen::Unreleasable => "its allocated + stranded memory",
            Seen::Floor => "the floor of its allocated memory (its lowest readings)",
            Seen::Device => "its device memory (NVML; no allocator probe)",
        };
        format!(
            "a leak: {what} rose from {} to {} over {} ({}) with nothing released",
            human(c.from),
            human(c.to),
            duration_ms(c.span_ms),
            self.rate_words()
        )
    }

    /// The remedy: what keeps the memory, at `site` when a block map names it.
    pub fn remedy(
        &self,
        pid: u32,
        site: Option<&str>,
        fw: Option<crate::sample::Framework>,
    ) -> String {
        let r = growth::leak_remedy_at(pid, site, fw);
        if self.probed() {
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
/// nothing released, or, where the message says fragmentation, a leak first (`leak_first`). A
/// probed process is judged on its probe's figures only (its device memory also holds its
/// cache); an unprobed one on its device memory, up to the failure.
pub fn leaked(f: &Failure, v: &Verdict, ctx: &Context, machine: &Machine) -> Option<Leak> {
    let fragmented = matches!(v.class, Class::Fragmentation | Class::Split);
    if !fragmented && !matches!(v.class, Class::PoolLimit | Class::DeviceFull) {
        return None;
    }
    let on_gpu = |t: &&ProcessTrack| {
        ctx.gpu_uuid
            .as_ref()
            .is_none_or(|u| *u == t.sample.gpu_uuid)
    };
    let t = tracks(f, machine).find(on_gpu)?;
    if let Some(h) = t.pool_history.as_ref() {
        if fragmented {
            let stranded = stranded_at(f, t)?;
            return leak_first(t, f.at_ms, stranded);
        }
        let unreleasable = growth::climb(h, f.at_ms).map(|climb| Leak {
            climb,
            seen: Seen::Unreleasable,
        });
        return unreleasable.or_else(|| floor_leak(t, f.at_ms));
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
    // Where the message says fragmentation, what stayed allocated of the rise (the rise less
    // what sat stranded at the failure) must be more than what was stranded.
    let kept = match (fragmented, stranded_at(f, t)) {
        (false, _) => true,
        (true, Some(s)) => rise.saturating_sub(s) >= s,
        (true, None) => false,
    };
    (kept && rise >= MIN_RISE.max(total / 1000 * MIN_RISE_PERMILLE)).then_some(Leak {
        climb: c,
        seen: Seen::Device,
    })
}

/// What sat stranded in the pool at the failure: the message's unallocated cache (PyTorch's
/// "reserved but unallocated"), else the probe's stranded (or free) figure.
fn stranded_at(f: &Failure, t: &ProcessTrack) -> Option<u64> {
    let n = &f.numbers;
    let cached = n
        .cached
        .map(|c| c.bytes)
        .or_else(|| Some(n.reserved?.bytes.saturating_sub(n.allocated?.bytes)));
    let pool = t.sample.pool.value();
    cached.or_else(|| pool.and_then(|p| p.unusable_free()))
}

/// A leak first in a pool whose failure looks like fragmentation: allocated's floor climbed into
/// `at_ms` (in the last minute, or as a slow trend) with nothing released, by more than the
/// `stranded` bytes at the failure.
pub fn leak_first(t: &ProcessTrack, at_ms: u64, stranded: u64) -> Option<Leak> {
    let h = t.pool_history.as_ref()?;
    let fast = floor_leak(t, at_ms);
    let slow = || {
        let tr = trend(&h.allocated, t.first_seen_ms.saturating_add(SETTLE_MS))?;
        Some(Leak {
            climb: Climb {
                span_ms: tr.span_ms(),
                from: tr.from,
                to: tr.to,
                rate: tr.rate,
            },
            seen: Seen::Floor,
        })
    };
    fast.or_else(slow)
        .filter(|l| l.climb.to.saturating_sub(l.climb.from) >= stranded)
}

/// Allocated's floor climbing into `at_ms` (the readings of the minute before it, up to the
/// sample whose figures already count the OOM: the failure unwinding frees its step's
/// temporaries, and on an H100 the probe read GPT-2 keeping logits slices at 5 GiB there after
/// 11.7 GiB, a release the leak never made).
fn floor_leak(t: &ProcessTrack, at_ms: u64) -> Option<Leak> {
    let h = t.pool_history.as_ref()?;
    let counted = t
        .probe_oom
        .map(|o| o.rose_ms)
        .filter(|r| *r <= at_ms.saturating_add(RECENT_MS))
        .unwrap_or(u64::MAX);
    let series: Vec<(u64, u64)> = h
        .allocated
        .iter()
        .filter(|p| p.at_ms <= at_ms && p.at_ms + 60_000 > at_ms && p.at_ms < counted)
        .filter_map(|p| Some((p.at_ms, p.value?)))
        .collect();
    let last = series.last()?.0;
    if at_ms.saturating_sub(last) > RECENT_MS {
        return None;
    }
    let c = growth::floor::climb(&series, 0, last)?;
    (c.to.saturating_sub(c.from) >= MIN_RISE).then_some(Leak {
        climb: Climb {
            span_ms: c.span_ms,
            from: c.from,
            to: c.to,
            rate: c.rate,
        },
        seen: Seen::Floor,
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
