//! A preallocated pool's failure printed without its dump: the request against what the process
//! is known to hold, the occupancy map (`*` used, `_` free) when the log has one, and a JAX
//! memory-fraction setting that sized the pool.

use super::{Class, Rules, Verdict, device_rule, preallocating};
use crate::analysis::context::Context;
use crate::oom::failure::{Dialect, Size};
use crate::oom::sizes::human;
use crate::sample::Framework;

/// The JAX variables that size the pool, the newer name first (setting both is an error in JAX).
const FRACTION_VARS: [&str; 2] = ["XLA_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_MEM_FRACTION"];

/// A memory-fraction setting of a JAX process: the variable, its value, and the pool it gives.
struct Fraction {
    var: &'static str,
    value: String,
    pool: Option<u64>,
}

fn fraction(r: &Rules) -> Option<Fraction> {
    let jax = r.f.source == Some(Dialect::Jax) || r.ctx.framework == Some(Framework::Jax);
    if !jax {
        return None;
    }
    let settings = r.ctx.settings.as_ref()?;
    let (var, value) = FRACTION_VARS
        .into_iter()
        .find_map(|k| Some((k, settings.get(k)?.trim().to_string())))?;
    let pool = pool_of(&value, r.ctx);
    Some(Fraction { var, value, pool })
}

/// The pool a fraction of the GPU's total memory makes.
fn pool_of(value: &str, ctx: &Context) -> Option<u64> {
    let f: f64 = value
        .parse()
        .ok()
        .filter(|f: &f64| (0.0..=1.0).contains(f))?;
    let total = ctx.gpu?.total;
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    Some((total as f64 * f) as u64)
}

/// Device memory a process holds outside its allocator's pool (the CUDA context; ~500 MiB on an
/// H100 with lazy loading), taken off its NVML figure to bound the pool from above.
const CONTEXT_ALLOWANCE: u64 = 512 << 20;

/// A pool that grows on demand (no preallocation) and failed with free memory in several pieces:
/// the occupancy map's free share of what the process held, less its context, is a lower
/// estimate of the pool's free memory; if that covers the request, the pool was fragmented.
fn grown_pool_fragmented(r: &mut Rules, req: Size) -> bool {
    let (Some(o), Some(held)) = (r.f.numbers.occupancy, r.ctx.process_memory) else {
        return false;
    };
    let free = held.saturating_sub(CONTEXT_ALLOWANCE) / 100 * u64::from(o.free_pct);
    if o.free_runs < 2 || free < req.bytes {
        return false;
    }
    r.certain = false;
    r.note(format!(
        "pool occupancy map: {}% in use, {}% free in {} pieces",
        o.used_pct, o.free_pct, o.free_runs
    ));
    r.note(format!(
        "about {} free in the pool: {}% of the {} the process held, less {} for its CUDA context",
        human(free),
        o.free_pct,
        human(held),
        human(CONTEXT_ALLOWANCE)
    ));
    true
}

/// A pool allocator's failure without its dump.
pub(super) fn no_dump(mut r: Rules, req: Size) -> Verdict {
    if !preallocating(r.f, r.ctx) {
        if grown_pool_fragmented(&mut r, req) {
            return r.done(
                Class::Fragmentation,
                format!("asked {req}, its pool had it free in pieces"),
            );
        }
        return device_rule(r, req);
    }
    r.note(if r.ctx.settings.is_some() {
        "the pool was preallocated: the GPU's free memory is not what the allocator had".into()
    } else {
        "if the pool was preallocated (the default), the GPU's free memory is not what the allocator had".into()
    });
    let fraction = fraction(&r);
    if let Some(fr) = &fraction {
        let size = fr
            .pool
            .map_or_else(String::new, |p| format!(" ({} of this GPU)", human(p)));
        r.note(format!("{}={} sized the pool{size}", fr.var, fr.value));
    }
    let pool = fraction.as_ref().and_then(|f| f.pool);
    if let Some(pm) = pool.or(r.ctx.process_memory)
        && req.bytes > pm
    {
        r.certain = false;
        r.note(format!(
            "larger than the process's whole pool ({})",
            human(pm)
        ));
        return r.done(Class::PoolLimit, format!("asked {req}, more than the pool"));
    }
    if let Some(o) = r.f.numbers.occupancy {
        let pieces = match o.free_runs {
            0 => String::new(),
            1 => " in one block".into(),
            n => format!(" in {n} pieces"),
        };
        r.note(format!(
            "pool occupancy map: {}% in use, {}% free{pieces}",
            o.used_pct, o.free_pct
        ));
        if o.free_runs <= 1 {
            // The one free block was too small; only a fraction setting says the pool could not grow.
            r.certain = fraction.is_some();
            return r.done(
                Class::PoolLimit,
                format!("asked {req}, the pool was {}% full", o.used_pct),
            );
        }
        if let Some(p) = pool {
            let free = p / 100 * u64::from(o.free_pct);
            r.certain = false;
            r.note(format!("about {} free in the pool", human(free)));
            if free >= req.bytes {
                return r.done(
                    Class::Fragmentation,
                    format!("asked {req}, about {} free in pieces", human(free)),
                );
            }
            return r.done(Class::PoolLimit, format!("asked {req}, the pool was full"));
        }
    }
    if let Some(fr) = fraction {
        r.certain = false;
        return r.done(
            Class::PoolLimit,
            format!("asked {req} from a pool capped by {}", fr.var),
        );
    }
    r.note("no allocator dump in the log to tell fragmentation from a full pool".into());
    r.done(
        Class::Unknown,
        format!("asked {req} from a preallocated pool"),
    )
}
