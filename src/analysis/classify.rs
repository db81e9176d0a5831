//! Why an allocation failed, from the message's own numbers (and the GPU at that moment when the
//! state knows it): the reference's §1 rules, `likely` where printed rounding straddles a threshold
//! or the deciding number is a sample taken near, not at, the failure.

use serde::{Deserialize, Serialize};

use crate::analysis::context::{Context, Other};
use crate::oom::failure::{Allocator, Dialect, Failure, Size};
use crate::oom::sizes::human;
use crate::sample::Framework;

mod pool;

/// The kind of failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// Enough memory sat free inside the process's pool, none of it in one block.
    Fragmentation,
    /// Pool slack plus device free would have fit; neither alone did.
    Split,
    /// A configured limit (fraction, memory limit, pool limit) was reached.
    PoolLimit,
    /// The GPU was full (other processes, or the request is too large).
    DeviceFull,
    /// The driver refused although it reported enough free memory.
    Driver,
    /// A leak that filled the pool, fragmenting it on the way: never the message's own verdict
    /// (it looks like fragmentation); the failure's history makes it (`causes::leaked`).
    Leak,
    Unknown,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Fragmentation => "fragmentation",
            Class::Split => "split",
            Class::PoolLimit => "pool-limit",
            Class::DeviceFull => "device-full",
            Class::Driver => "driver",
            Class::Leak => "leak",
            Class::Unknown => "unknown",
        }
    }
}

/// Whether an alert's class is an OOM's (not a memory fault's, an Xid's or a risk's).
pub fn is_oom(class: &str) -> bool {
    [
        Class::Fragmentation,
        Class::Split,
        Class::PoolLimit,
        Class::DeviceFull,
        Class::Driver,
        Class::Leak,
        Class::Unknown,
    ]
    .iter()
    .any(|c| c.as_str() == class)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    Certain,
    Likely,
}

impl Confidence {
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Certain => "certain",
            Confidence::Likely => "likely",
        }
    }
}

/// A classified failure: the class, how sure, and the numbers that decided it.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub class: Class,
    pub confidence: Confidence,
    /// A few words for a one-line title.
    pub headline: String,
    pub evidence: Vec<String>,
    /// Who else held the GPU, for device-full, largest first.
    pub holders: Vec<Other>,
}

/// Evidence gathered while the rules run.
struct Rules<'a> {
    f: &'a Failure,
    ctx: &'a Context,
    certain: bool,
    evidence: Vec<String>,
}

impl Rules<'_> {
    fn ge(&mut self, a: Size, b: Size) -> bool {
        let v = a.at_least(b);
        self.certain &= v.certain;
        v.holds
    }

    fn note(&mut self, s: String) {
        self.evidence.push(s);
    }

    fn done(self, class: Class, headline: String) -> Verdict {
        let holders = if class == Class::DeviceFull {
            holders(self.f, self.ctx)
        } else {
            Vec::new()
        };
        let mut evidence = self.evidence;
        if !holders.is_empty() {
            let named: Vec<String> = holders.iter().map(Other::describe).collect();
            evidence.push(format!("also on the GPU: {}", named.join(", ")));
        }
        Verdict {
            class,
            confidence: if self.certain {
                Confidence::Certain
            } else {
                Confidence::Likely
            },
            headline,
            evidence,
            holders,
        }
    }
}

/// Classifies `f`; `ctx` may be empty.
pub fn classify(f: &Failure, ctx: &Context) -> Verdict {
    let mut r = Rules {
        f,
        ctx,
        certain: true,
        evidence: Vec::new(),
    };
    if let (None, Some(text)) = (f.numbers.request, &f.numbers.request_unreadable) {
        r.note(format!(
            "the request printed, `{text}`, is no size a program can ask for (negative, not a \
             number, an exabyte and more, or more digits than any size has)"
        ));
        return r.done(Class::Unknown, "the request size is unreadable".into());
    }
    let Some(req) = f.numbers.request else {
        r.note("the message prints no request size".into());
        return r.done(Class::Unknown, "no numbers in the message".into());
    };
    r.note(format!("asked {req}"));
    match f.allocator {
        Some(Allocator::Caching) => caching(r, req),
        Some(Allocator::Bfc) => bfc(r, req),
        Some(Allocator::CudaAsync) => cuda_async(r, req),
        Some(Allocator::CupyPool) => cupy(r, req),
        Some(Allocator::Platform) => pool::no_dump(r, req),
        None => device_rule(r, req),
    }
}

fn caching(mut r: Rules, req: Size) -> Verdict {
    let n = &r.f.numbers;
    let reserved = n.reserved.or_else(|| Some(n.allocated?.plus(n.cached?)));
    let cached = n.cached.or_else(|| Some(reserved?.minus(n.allocated?)));
    let free = n.free;
    // Stranded cache first: when it covered the request, was a real share of the pool, and the
    // request would have fit under any cap, the memory was there in pieces too small, so
    // fragmentation is the cause even if a cap was reached too. A few MiB left at a full pool is
    // rounding, not fragmentation.
    if let Some(c) = cached {
        r.note(format!("{c} reserved by PyTorch but unallocated"));
        let share = reserved.is_none_or(|rv| {
            c.bytes.saturating_mul(1000) >= rv.bytes.saturating_mul(FRAGMENTED_PERMILLE)
        });
        let fits = match (n.allowed, n.allocated) {
            (Some(cap), Some(a)) => cap.bytes >= a.bytes.saturating_add(req.bytes),
            _ => true,
        };
        if r.ge(c, req) && !(share && fits) {
            r.note(
                "that is too small a share of the pool, or the request would not have fit under the cap anyway: not fragmentation"
                    .into(),
            );
        } else if r.ge(c, req) {
            if let (Some(allowed), Some(reserved)) = (n.allowed, reserved) {
                r.note(format!(
                    "{allowed} allowed to the process, {reserved} reserved: the cap was reached with the request's size stranded inside it"
                ));
            }
            if let Some(free) = free {
                r.note(format!("the GPU itself had {free} free"));
            }
            return r.done(
                Class::Fragmentation,
                format!("asked {req}, {c} stranded in the cache"),
            );
        }
    }
    if let (Some(allowed), Some(reserved)) = (n.allowed, reserved) {
        r.note(format!(
            "{allowed} allowed to the process, {reserved} reserved"
        ));
        if !r.ge(allowed, reserved.plus(req)) {
            return r.done(Class::PoolLimit, format!("asked {req}, {allowed} allowed"));
        }
    }
    let Some(free) = free else {
        return device_rule(r, req);
    };
    match r.f.numbers.total {
        Some(t) => r.note(format!("{free} free of {t}")),
        None => r.note(format!("{free} free")),
    }
    if r.ge(free, req) {
        return r.done(Class::Driver, format!("asked {req} with {free} free"));
    }
    if let Some(c) = cached
        && r.ge(c.plus(free), req)
    {
        // PyTorch flushes what it can release before failing: what stayed was split blocks.
        // With other processes holding the GPU, they are what was missing.
        if !r.ctx.others.is_empty() {
            r.note(format!(
                "its {c} unallocated cache plus the {free} free would have fit, but that cache sat in split blocks it could not release"
            ));
            return r.done(Class::DeviceFull, format!("asked {req}, {free} free"));
        }
        return r.done(
            Class::Split,
            format!("asked {req}: cache {c} + free {free} would fit"),
        );
    }
    if let Some(t) = r.f.numbers.total
        && req.bytes > t.bytes
    {
        r.note(format!("the request is larger than the whole GPU ({t})"));
    }
    r.done(Class::DeviceFull, format!("asked {req}, {free} free"))
}

fn bfc(mut r: Rules, req: Size) -> Verdict {
    let n = &r.f.numbers;
    let pool_free = n.pool_free.or_else(|| Some(n.pool?.minus(n.in_use?)));
    let (limit, in_use, largest) = (n.pool_limit, n.in_use, n.largest_free);
    if let Some(pf) = pool_free {
        r.note(format!("{pf} free in the allocator's pool"));
        if r.ge(pf, req) {
            if let Some(l) = largest {
                r.note(format!("largest free chunk {l}"));
            }
            return r.done(
                Class::Fragmentation,
                format!("asked {req}, {pf} free in the pool in pieces"),
            );
        }
    }
    let (Some(limit), Some(in_use)) = (limit, in_use) else {
        return pool::no_dump(r, req);
    };
    let headroom = limit.minus(in_use);
    if r.ge(headroom, req) {
        r.note(format!(
            "the pool could still grow by {headroom} (limit {limit}) but a new region was refused"
        ));
        return r.done(
            Class::DeviceFull,
            format!("asked {req}, the pool could not grow"),
        );
    }
    r.note(format!(
        "the pool is at its limit ({limit}, {in_use} in use)"
    ));
    if let Some(g) = r.ctx.gpu
        && limit.bytes.saturating_mul(10) >= g.total.saturating_mul(9)
    {
        r.note(format!("the limit is most of the GPU ({})", human(g.total)));
        return r.done(Class::DeviceFull, format!("asked {req}, the GPU is full"));
    }
    r.done(Class::PoolLimit, format!("asked {req}, pool limit {limit}"))
}

/// Whether a BFC pool was sized up front, so NVML's free memory is not the pool's.
pub fn preallocating(f: &Failure, ctx: &Context) -> bool {
    let jax = f.source == Some(Dialect::Jax) || ctx.framework == Some(Framework::Jax);
    let Some(s) = &ctx.settings else {
        return jax || f.source == Some(Dialect::Tensorflow);
    };
    let get = |k: &str| s.get(k).map(|v| v.trim());
    if jax {
        let pre = get("XLA_PYTHON_CLIENT_PREALLOCATE")
            .is_none_or(|v| !matches!(v, "false" | "False" | "0"));
        return pre && get("XLA_PYTHON_CLIENT_ALLOCATOR") != Some("platform");
    }
    f.source == Some(Dialect::Tensorflow)
        && get("TF_FORCE_GPU_ALLOW_GROWTH") != Some("true")
        && get("TF_GPU_ALLOCATOR") != Some("cuda_malloc_async")
}

fn cuda_async(mut r: Rules, req: Size) -> Verdict {
    let Some(free) = r.f.numbers.free else {
        return device_rule(r, req);
    };
    r.note(format!("CUDA reported {free} free"));
    if r.ge(free, req) {
        return r.done(Class::Split, format!("asked {req} with {free} free"));
    }
    r.done(Class::DeviceFull, format!("asked {req}, {free} free"))
}

fn cupy(mut r: Rules, req: Size) -> Verdict {
    let n = &r.f.numbers;
    let (pool, limit) = (n.pool, n.pool_limit);
    if let Some(p) = pool {
        r.note(format!("the pool held {p}"));
    }
    if let (Some(l), Some(p)) = (limit, pool) {
        r.note(format!("pool limit {l}"));
        if !r.ge(l, p.plus(req)) {
            return r.done(Class::PoolLimit, format!("asked {req}, pool limit {l}"));
        }
    }
    device_rule(r, req)
}

/// Unallocated cache below this share of the pool (per mille) is rounding at a full pool.
const FRAGMENTED_PERMILLE: u64 = 50;

/// The allocator probe's figures against the request: a pool at its own limit (JAX's
/// `bytes_limit`, a CuPy or PyTorch cap) refuses whatever the GPU has free.
fn probe_limit(r: &mut Rules, req: Size) -> bool {
    let Some(pool) = r.ctx.pool.as_ref() else {
        return false;
    };
    let Some(limit) = pool.limit.filter(|l| *l > 0) else {
        return false;
    };
    let over = |b: Option<u64>| b.filter(|b| b.saturating_add(req.bytes) > limit);
    let no_block = pool.largest_free_block.is_none_or(|b| b < req.bytes);
    let held = over(pool.reserved).filter(|_| no_block);
    let Some(at) = held.or(over(pool.allocated.max(pool.peak_allocated))) else {
        return false;
    };
    r.certain = false;
    r.note(format!(
        "its pool was at {} of its {} limit (allocator probe), with no free block of that size",
        human(at),
        human(limit)
    ));
    true
}

/// The GPU's free memory at the last sample against the request (never exact: `likely`).
fn device_rule(mut r: Rules, req: Size) -> Verdict {
    if probe_limit(&mut r, req) {
        return r.done(
            Class::PoolLimit,
            format!("asked {req}, its pool at its limit"),
        );
    }
    let Some(g) = r.ctx.gpu else {
        r.note("no GPU reading at the failure to compare with".into());
        return r.done(Class::Unknown, format!("asked {req}"));
    };
    r.certain = false;
    r.note(format!(
        "GPU{} had {} free of {} at the last sample",
        g.index,
        human(g.free),
        human(g.total)
    ));
    if g.free >= req.bytes {
        r.done(
            Class::Driver,
            format!("asked {req} with {} free", human(g.free)),
        )
    } else {
        r.done(
            Class::DeviceFull,
            format!("asked {req}, {} free", human(g.free)),
        )
    }
}

/// Other processes on the GPU: from the state, else from the message's own list.
fn holders(f: &Failure, ctx: &Context) -> Vec<Other> {
    const SHOWN: usize = 5;
    if !ctx.others.is_empty() {
        return ctx.others.iter().take(SHOWN).cloned().collect();
    }
    let mut listed: Vec<Other> = f
        .numbers
        .holders
        .iter()
        .filter(|h| h.pid != f.pid)
        .filter_map(|h| {
            Some(Other {
                pid: h.pid?,
                command: String::new(),
                bytes: h.used.bytes,
            })
        })
        .collect();
    listed.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.pid.cmp(&b.pid)));
    listed.truncate(SHOWN);
    listed
}

#[cfg(test)]
mod tests;
