//! Risks read from the allocator probe's figures, before any failure: a leak or a fragmentation
//! that builds (`growth.rs`), a peak that grows every step (`peaks.rs`), a fragmented pool that
//! cannot grow around its holes, a pool near its limit, cache one process could give back while
//! its GPU is short; and an OOM the probe saw (or a probed process that died at its limit) when no
//! log reached gpumon.

use crate::analysis::remedy::{defragment, dialect_of, expandable, raise_limit};
use crate::analysis::risk::{Risk, context, figures};
use crate::model::{GpuTrack, Level, Machine, ProcessTrack, processes_on};
use crate::oom::sizes::human;
use crate::sample::Pool;

/// Pools smaller than this are not worth a warning.
const MIN_POOL: u64 = 512 << 20;
/// Free bytes in a pool that count as "much", at least, and their share of the pool (per mille).
const MIN_FREE: u64 = 512 << 20;
const MIN_FREE_PERMILLE: u64 = 100;
/// Cache flushes in this window that count as repeating (one flush that succeeded is normal).
const RETRY_WINDOW_MS: u64 = 60_000;
const RETRIES_REPEAT: usize = 2;
/// A failed pool whose allocations reached this share of its limit (per mille) was at it.
pub(super) const AT_LIMIT_PERMILLE: u64 = 900;
/// A live pool whose allocations reach this share of its limit (per mille) is warned: a job tuned
/// to 90-95 % of its cap runs there for hours.
const NEAR_LIMIT_PERMILLE: u64 = 950;
/// Releasable cache worth naming.
const MIN_RELEASABLE: u64 = 1 << 30;
/// A GPU with less free than this is short (or 2 % of its memory, whichever is larger).
const SHORT_FREE: u64 = 1 << 30;
/// Holes under expandable segments are looked for in this window, over at least this span.
const HOLES_WINDOW_MS: u64 = 30_000;
const HOLES_SPAN_MS: u64 = 6_000;
/// A pool that shrank by more than this gave memory back.
const GIVEN_BACK: u64 = 64 << 20;
/// Said of a pool judged under expandable segments.
const EXPANDABLE: &str = "under expandable_segments:True PyTorch counts no inactive split bytes: the pool's whole free part (reserved − allocated) is judged";
/// A process that ended at its limit is suspected only this long after it ended, when its log has
/// still said no failure (an H100 JAX job's OOM line was read the second after its exit).
const LOG_GRACE_MS: u64 = 3_000;
/// A failure alert this close to a probe's OOM is the same failure, read from the log.
pub(super) const SAME_FAILURE_MS: u64 = 10_000;

/// The risks of every probed process on the machine at `at_ms` (raised or not: the caller
/// keeps each (class, pid, GPU) to once). `failed(pid, since_ms)` says whether a log already
/// reported a failure of that process since then.
pub fn risks(machine: &Machine, at_ms: u64, failed: &dyn Fn(u32, u64) -> bool) -> Vec<Risk> {
    let mut out = Vec::new();
    for g in machine.gpus.values() {
        let on_gpu: Vec<&ProcessTrack> = processes_on(&machine.processes, &g.sample.uuid).collect();
        for t in &on_gpu {
            let Some(pool) = t.sample.pool.value() else {
                continue;
            };
            if t.exited_ms.is_none() {
                // Nothing more of a process that has just failed: its figures are its failure
                // unwinding (on an H100 a growing peak was raised beside a leak's OOM).
                let failing = t
                    .probe_oom
                    .is_some_and(|o| at_ms.saturating_sub(o.rose_ms) <= SAME_FAILURE_MS)
                    || failed(t.sample.pid, at_ms.saturating_sub(SAME_FAILURE_MS));
                if !failing {
                    let growing = super::growth::risk(t, pool, g, at_ms);
                    if growing.is_none() && !super::growth::floor_climbs(t, pool, g, at_ms) {
                        out.extend(fragmenting(t, pool, g, at_ms));
                        out.extend(super::peaks::risk(t, pool, g, at_ms));
                    }
                    // No "raise the limit" for a process known to leak: the leak is its cause.
                    let leaking = growing.is_some() || leak_known(machine, t.sample.pid);
                    out.extend(growing);
                    if !leaking {
                        out.extend(near_limit(t, pool));
                    }
                    out.extend(releasable(t, pool, g, &on_gpu));
                }
                out.extend(failed::probe_oom(t, pool, g, at_ms, failed));
            } else if let Some(exited) = t.exited_ms
                && at_ms >= exited + LOG_GRACE_MS
                && !failed(t.sample.pid, exited.saturating_sub(SAME_FAILURE_MS))
            {
                out.extend(failed::died_at_limit(t, pool));
            }
        }
    }
    out
}

fn label(pool: &Pool) -> &'static str {
    pool.framework.label()
}

/// Much of the pool free but unusable (`free`: see `unusable`), the pool unable to grow around it
/// (`room`: what it may still grow by, `None` when unknown), and the free part only in pieces
/// smaller than what the job allocates, or the allocator flushing its cache to retry again and
/// again (`retries` in the last minute): one flush that succeeded is normal, not a sign.
pub(super) fn fragmented(
    pool: &Pool,
    free: Option<u64>,
    room: Option<u64>,
    retries: usize,
) -> Option<String> {
    let reserved = pool.reserved.filter(|r| *r >= MIN_POOL)?;
    let free = free?;
    let much = free >= MIN_FREE.max(reserved / 1000 * MIN_FREE_PERMILLE);
    let matters = room.is_none_or(|r| r < free);
    let pieces = pool
        .largest_free_block
        .filter(|b| b.saturating_mul(4) <= free && pool.largest_alloc.is_none_or(|a| *b < a));
    match (much && matters, pieces) {
        (true, Some(b)) => Some(format!(
            "{} free in the pool, but its largest free block is {}",
            human(free),
            human(b)
        )),
        (true, None) if retries >= RETRIES_REPEAT => Some(format!(
            "the allocator flushed its cache to retry {retries} times in the last minute, with {} of its pool free but unusable",
            human(free)
        )),
        _ => None,
    }
}

/// Holes building at a pool that cannot grow around them: much of it free and the free part
/// climbing (`holes_build`), more than the pool may still grow by.
fn building(
    pool: &Pool,
    free: Option<u64>,
    room: Option<u64>,
    holes: &super::growth::Climb,
) -> Option<String> {
    let reserved = pool.reserved.filter(|r| *r >= MIN_POOL)?;
    let free = free?;
    let much = free >= MIN_FREE.max(reserved / 1000 * MIN_FREE_PERMILLE);
    let rise = holes.to.saturating_sub(holes.from);
    (much && room.is_some_and(|r| r < free) && rise >= MIN_FREE / 2).then(|| {
        format!(
            "{} free in the pool and growing ({}) while it can grow by only {}: holes between live blocks it keeps, and a request larger than the largest of them fails",
            human(free),
            crate::model::units::rate(holes.rate),
            human(room.unwrap_or(0))
        )
    })
}

/// What the pool may still grow by: to its own limit, or by what the GPU has free.
fn room(pool: &Pool, g: &GpuTrack) -> Option<u64> {
    let reserved = pool.reserved?;
    let own = pool
        .limit
        .filter(|l| *l > 0)
        .map(|l| l.saturating_sub(reserved));
    let gpu = g.sample.memory.value().map(|m| m.free);
    match (own, gpu) {
        (Some(o), Some(g)) => Some(o.min(g)),
        (o, g) => o.or(g),
    }
}

/// The free part of the pool that its requests cannot use: stranded in split blocks where the
/// framework reports them, else all of its cached free bytes. Under PyTorch's expandable segments
/// nothing is counted as split (`inactive_split_bytes` stays 0), so the whole free part is judged.
pub(super) fn unusable(pool: &Pool, expandable: bool) -> Option<u64> {
    if expandable {
        pool.cached_free
    } else {
        pool.unusable_free()
    }
}

/// Under expandable segments, holes that build: the pool's free part (reserved − allocated)
/// climbed over the last `HOLES_WINDOW_MS` (the climb rule, over at least `HOLES_SPAN_MS`) while
/// the pool gave nothing back: memory the job freed between live blocks, kept by the pool.
fn holes_build(t: &ProcessTrack, at_ms: u64) -> Option<super::growth::Climb> {
    let h = t.pool_history.as_ref()?;
    let from = at_ms.saturating_sub(HOLES_WINDOW_MS);
    let pairs: Vec<(u64, u64, u64)> = h
        .reserved
        .iter()
        .zip(h.allocated.iter())
        .filter(|(r, _)| r.at_ms >= from && r.at_ms <= at_ms)
        .filter_map(|(r, a)| Some((r.at_ms, r.value?, a.value?)))
        .collect();
    let first_reserved = pairs.first()?.1;
    if pairs
        .iter()
        .any(|p| p.1.saturating_add(GIVEN_BACK) < first_reserved)
    {
        return None;
    }
    let free: Vec<(u64, u64)> = pairs
        .iter()
        .map(|p| (p.0, p.1.saturating_sub(p.2)))
        .collect();
    super::growth::climbs_over(&free, HOLES_SPAN_MS)
}

fn fragmenting(t: &ProcessTrack, pool: &Pool, g: &GpuTrack, at_ms: u64) -> Option<Risk> {
    let ctx = context(t);
    let expandable = expandable(&ctx);
    let mut retries = t
        .pool_history
        .as_ref()
        .map_or(0, |p| p.retries_within(at_ms, RETRY_WINDOW_MS));
    // Under expandable segments a flush releases free pages: retries say something only while
    // the holes keep building anyway, and so do holes without a flush.
    let holes = expandable.then(|| holes_build(t, at_ms)).flatten();
    if expandable && holes.is_none() {
        retries = 0;
    }
    let free = unusable(pool, expandable);
    let why = fragmented(pool, free, room(pool, g), retries)
        .or_else(|| building(pool, free, room(pool, g), holes.as_ref()?))?;
    let pid = t.sample.pid;
    let mut evidence = figures(pool);
    if expandable {
        evidence.insert(0, EXPANDABLE.into());
    }
    Some(Risk {
        class: "fragmentation-risk",
        pid: Some(pid),
        gpu: t.sample.gpu_uuid.clone(),
        level: Level::Suspected,
        confidence: None,
        title: format!("pid {pid} {} pool fragmenting: {why}", label(pool)),
        evidence,
        remedy: defragment(dialect_of(pool.framework), &ctx),
    })
}

/// Whether a live process's leak or fragmentation still shows now (what keeps its alert active).
pub fn still_at_risk(t: &ProcessTrack, pool: &Pool, g: &GpuTrack, at_ms: u64) -> bool {
    super::growth::risk(t, pool, g, at_ms).is_some() || fragmenting(t, pool, g, at_ms).is_some()
}

/// Allocated and the limit, when allocated reaches `permille` of it.
pub(super) fn at_limit(pool: &Pool, permille: u64) -> Option<(u64, u64)> {
    let (used, limit) = (pool.allocated?, pool.limit.filter(|l| *l > 0)?);
    (used.saturating_mul(1000) >= limit.saturating_mul(permille)).then_some((used, limit))
}

/// Whether an alert already says `pid` leaks (its own rule, its site, or its job's ranks).
fn leak_known(machine: &Machine, pid: u32) -> bool {
    machine.alerts.iter().any(|a| {
        a.pid == Some(pid)
            && matches!(
                a.class.as_str(),
                "leak" | "slow-leak" | "leak-site" | "rank-grows-alone" | "ranks-grow-alike"
            )
    })
}

fn near_limit(t: &ProcessTrack, pool: &Pool) -> Option<Risk> {
    let (used, limit) = at_limit(pool, NEAR_LIMIT_PERMILLE)?;
    let pid = t.sample.pid;
    Some(Risk {
        class: "pool-near-limit",
        pid: Some(pid),
        gpu: t.sample.gpu_uuid.clone(),
        level: Level::Suspected,
        confidence: None,
        title: format!(
            "pid {pid} {} pool at {}% of its limit ({} of {})",
            label(pool),
            used.saturating_mul(100) / limit,
            human(used),
            human(limit)
        ),
        evidence: figures(pool),
        remedy: raise_limit(None, dialect_of(pool.framework), &context(t)),
    })
}

pub(super) fn short(g: &GpuTrack) -> Option<u64> {
    let m = g.sample.memory.value()?;
    (m.free < SHORT_FREE.max(m.total / 50)).then_some(m.free)
}

fn releasable(
    t: &ProcessTrack,
    pool: &Pool,
    g: &GpuTrack,
    on_gpu: &[&ProcessTrack],
) -> Option<Risk> {
    let cache = pool.releasable().filter(|r| *r >= MIN_RELEASABLE)?;
    let free = short(g)?;
    let pid = t.sample.pid;
    let others: Vec<String> = on_gpu
        .iter()
        .filter(|o| o.exited_ms.is_none() && o.sample.pid != pid)
        .map(|o| format!("pid {}", o.sample.pid))
        .collect();
    if others.is_empty() {
        return None;
    }
    let remedy = match pool.framework {
        crate::sample::Framework::Pytorch => format!(
            "Call torch.cuda.empty_cache() in pid {pid} between phases, or set PYTORCH_ALLOC_CONF=garbage_collection_threshold:0.6 so it returns cache it does not use."
        ),
        crate::sample::Framework::Cupy => format!(
            "Call cupy.get_default_memory_pool().free_all_blocks() in pid {pid}, or give it a limit with set_limit."
        ),
        _ => format!("Have pid {pid} give the cache it does not use back to the GPU."),
    };
    Some(Risk {
        class: "releasable-cache",
        pid: Some(pid),
        gpu: t.sample.gpu_uuid.clone(),
        level: Level::Suspected,
        confidence: None,
        title: format!(
            "pid {pid} caches {} it could release while GPU{} has {} free for {}",
            human(cache),
            g.sample.index,
            human(free),
            others.join(", ")
        ),
        evidence: figures(pool),
        remedy,
    })
}

mod failed;

#[cfg(test)]
mod tests;
