//! The sentences of a diff: what reserved memory, framework settings, preallocated pools and
//! per-process overhead do to the device memory NVML reports. A device change is told by the
//! framework's pool first, where the probe reports it on both sides; overhead outside the
//! allocator is what the pool leaves unexplained, never a guess over it.

use super::settings::{Env, jax, pct, pool, settings};
use super::{Difference, Topic, label};
use crate::sample::Framework;
use crate::snapshot::lines::size;
use crate::snapshot::{Gpu, PoolDoc, Process, Snapshot};

/// Differences in device memory below this are noise.
const NOISE: u64 = 1 << 20;

const CONTEXT: &str = "the CUDA context, ~300-600 MiB bare and growing with SM count and driver, \
plus cuBLAS/cuDNN workspaces and loaded kernels";

/// The effect of a difference in reserved memory.
pub(super) fn reserved(ga: &Gpu, gb: &Gpu, ra: Option<u64>, rb: Option<u64>) -> String {
    match (ra, rb) {
        (Some(ra), Some(rb)) => {
            let (short, other) = if ra > rb { ("A", "B") } else { ("B", "A") };
            format!(
                "Driver and firmware take this before any process starts, so {short} has {} less \
                 for processes than {other}.",
                size(Some(ra.abs_diff(rb)))
            )
        }
        _ => {
            let (side, g) = if ra.is_none() { ("A", ga) } else { ("B", gb) };
            let why = g
                .unavailable
                .get("memory.reserved")
                .or_else(|| g.unavailable.get("memory"))
                .map_or("not recorded", String::as_str);
            format!(
                "{side}'s reserved memory is n/a ({why}); with NVML v1 it is counted in used, so \
                 the two sides' used figures are not comparable."
            )
        }
    }
}

/// Compares two processes matched by framework and command line.
pub(super) fn pair(
    a: &Snapshot,
    pa: &Process,
    b: &Snapshot,
    pb: &Process,
    out: &mut Vec<Difference>,
) {
    let subject = label(pa);
    let (ta, tb) = (total(a, pa), total(b, pb));
    let before = out.len();
    match (&pa.settings, &pb.settings) {
        (Some(ea), Some(eb)) => settings(&subject, ea, eb, ta, tb, out),
        _ => out.push(Difference::text(
            Topic::Setting,
            format!("{subject}: initial environment"),
            env_state(pa),
            env_state(pb),
            "One side's environment could not be read, so a setting that changes memory cannot \
             be ruled out."
                .into(),
        )),
    }
    let (da, db) = (pa.device_memory, pb.device_memory);
    if let (Some(x), Some(y)) = (da, db)
        && x.abs_diff(y) >= NOISE
    {
        let settled = out.len() == before;
        let effect = device_effect(pa, pb, (ta, tb), x.abs_diff(y), settled);
        out.push(Difference::bytes(
            Topic::DeviceMemory,
            format!("{subject}: device memory"),
            da,
            db,
            effect,
        ));
    }
    let (oa, ob) = (outside_pool(pa, ta), outside_pool(pb, tb));
    if (oa.is_some() || ob.is_some()) && oa.zip(ob).is_none_or(|(x, y)| x.abs_diff(y) >= NOISE) {
        let known = |o: Option<u64>, p: &Process| {
            o.map_or_else(
                || {
                    format!(
                        "unknown (NVML gives only the total, {})",
                        size(p.device_memory)
                    )
                },
                |o| format!("{} outside the JAX pool", size(Some(o))),
            )
        };
        out.push(Difference {
            a_bytes: oa,
            b_bytes: ob,
            ..Difference::text(
                Topic::Overhead,
                format!("{subject}: overhead outside the framework"),
                known(oa, pa),
                known(ob, pb),
                format!(
                    "Device memory minus the framework's pool is per-process overhead: {CONTEXT}; \
                     gpumon can size it only where the pool is known (JAX preallocation)."
                ),
            )
        });
    }
    if let (Some(qa), Some(qb)) = (&pa.pool, &pb.pool) {
        pools(&subject, qa, qb, out);
    }
}

/// The allocator probe's figures of the same job on both sides: what its pool holds, what is
/// allocated in it, and what is stranded in split blocks.
fn pools(subject: &str, qa: &PoolDoc, qb: &PoolDoc, out: &mut Vec<Difference>) {
    let parts: [(&str, Option<u64>, Option<u64>, &str); 3] = [
        (
            "allocated in its pool",
            qa.allocated,
            qb.allocated,
            "The job's live tensors and buffers differ: a different model, batch or input size, \
             not the allocator.",
        ),
        (
            "held by its pool",
            qa.reserved,
            qb.reserved,
            "The pool keeps freed memory cached (PyTorch, CuPy) or takes its size up front (JAX \
             preallocation): device memory follows what the pool holds, not what is allocated.",
        ),
        (
            "stranded in split blocks",
            qa.stranded,
            qb.stranded,
            "Free memory inside partly used blocks cannot serve a larger request: the side with \
             more stranded is closer to a fragmentation OOM (expandable_segments avoids it).",
        ),
    ];
    for (what, a, b, effect) in parts {
        if a.zip(b).is_some_and(|(x, y)| x.abs_diff(y) >= NOISE) {
            out.push(Difference::bytes(
                Topic::Pool,
                format!("{subject}: {what} (probe)"),
                a,
                b,
                effect.into(),
            ));
        }
    }
}

fn total(s: &Snapshot, p: &Process) -> Option<u64> {
    s.gpu(&p.gpu_uuid)?.memory.as_ref().map(|m| m.total)
}

fn env_state(p: &Process) -> String {
    match &p.settings {
        Some(_) => "read".into(),
        None => format!(
            "n/a ({})",
            p.unavailable
                .get("settings")
                .map_or("not recorded", String::as_str)
        ),
    }
}

/// Device memory outside JAX's preallocated pool, where the pool's size is known.
fn outside_pool(p: &Process, total: Option<u64>) -> Option<u64> {
    if p.framework != Some(Framework::Jax) {
        return None;
    }
    let (on, fraction) = jax(p.settings.as_ref()?);
    let pool = pool(fraction, total?);
    on.then(|| p.device_memory?.checked_sub(pool)).flatten()
}

/// A signed size: "+2.8G", "-512M".
fn signed(d: i128) -> String {
    let sign = if d < 0 { '-' } else { '+' };
    let bytes = u64::try_from(d.unsigned_abs()).unwrap_or(u64::MAX);
    format!("{sign}{}", size(Some(bytes)))
}

/// Whether `x` is `y` within noise: a MiB, or a tenth of `y` (the device figure and the pool's
/// are read a moment apart, and a growing pool moves between them).
fn close(x: i128, y: i128) -> bool {
    x.abs_diff(y) <= u128::from(NOISE).max(y.unsigned_abs() / 10)
}

/// The device change told by the pool's, where the probe reports the pool on both sides and it
/// moved the same way: `None` when the pool says nothing about it.
fn pool_first(pa: &Process, pb: &Process) -> Option<String> {
    let (qa, qb) = (pa.pool.as_ref()?, pb.pool.as_ref()?);
    let (ra, rb) = (qa.reserved?, qb.reserved?);
    let dd = i128::from(pb.device_memory?) - i128::from(pa.device_memory?);
    let rd = i128::from(rb) - i128::from(ra);
    if rd.unsigned_abs() < u128::from(NOISE) || rd.signum() != dd.signum() {
        return None;
    }
    let held = format!(
        "its pool holds {} ({} on A, {} on B)",
        signed(rd),
        size(Some(ra)),
        size(Some(rb))
    );
    let allocated = match (qa.allocated, qb.allocated) {
        (Some(x), Some(y)) => {
            let ad = i128::from(y) - i128::from(x);
            if close(ad, rd) {
                format!(
                    ", and what it allocated moved by the same {}: live tensors and buffers, so                      different work or a leak, not the allocator",
                    signed(ad)
                )
            } else {
                format!(
                    " while what it allocated moved by {}: the rest is memory the pool keeps                      cached",
                    signed(ad)
                )
            }
        }
        _ => String::new(),
    };
    let rest = dd - rd;
    Some(if close(dd, rd) {
        format!(
            "The framework's pool explains it: {held}{allocated}. It is the job's own memory,              not overhead outside the allocator."
        )
    } else {
        format!(
            "The framework's pool explains {} of it: {held}{allocated}. The other {} is outside              the pool: {CONTEXT}, or a figure read a moment before the other.",
            signed(rd),
            signed(rest)
        )
    })
}

/// Why two matched processes hold different device memory; `settled`: no setting differs.
fn device_effect(
    pa: &Process,
    pb: &Process,
    (ta, tb): (Option<u64>, Option<u64>),
    delta: u64,
    settled: bool,
) -> String {
    if let Some(pool) = pool_first(pa, pb) {
        return pool;
    }
    let overhead = format!(
        "With the same command{}, the {} difference is likely per-process overhead outside \
         the framework's allocator ({CONTEXT}) or different work; NVML alone cannot tell them \
         apart.",
        if settled {
            " and settings"
        } else {
            " (the setting differences above may explain part of it)"
        },
        size(Some(delta))
    );
    let (Some(ea), Some(eb)) = (&pa.settings, &pb.settings) else {
        return overhead;
    };
    match pa.framework {
        Some(Framework::Jax) => {
            let ((on_a, fa), (on_b, fb)) = (jax(ea), jax(eb));
            let pool_of = |f, t: Option<u64>| {
                t.map_or_else(
                    || format!("{} of an unknown total", pct(f)),
                    |t| {
                        format!(
                            "{} of {} = {}",
                            pct(f),
                            size(Some(t)),
                            size(Some(pool(f, t)))
                        )
                    },
                )
            };
            match (on_a, on_b) {
                (true, true) => format!(
                    "Both preallocate a pool (A {}, B {}), so device memory shows the pools, \
                     which follow the GPUs' totals, not the work.",
                    pool_of(fa, ta),
                    pool_of(fb, tb)
                ),
                (true, false) | (false, true) => {
                    let (on, off, f, t) = if on_a {
                        ("A", "B", fa, ta)
                    } else {
                        ("B", "A", fb, tb)
                    };
                    format!(
                        "{on}'s device memory is JAX's preallocated pool ({}) plus what lies \
                         outside it; {off}'s, with preallocation off, is what it uses, so the two \
                         do not compare as use.",
                        pool_of(f, t)
                    )
                }
                (false, false) => overhead,
            }
        }
        Some(Framework::Tensorflow) if !growth(ea) || !growth(eb) => "Without allow growth \
            TensorFlow maps nearly all GPU memory at start, so its device memory follows the \
            GPU's free memory, not the work."
            .into(),
        _ => overhead,
    }
}

fn growth(env: &Env) -> bool {
    env.get("TF_FORCE_GPU_ALLOW_GROWTH")
        .is_some_and(|v| v == "true")
}
