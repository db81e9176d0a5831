//! Framework settings from a process's initial environment: what each does to memory, and
//! the differences between two matched processes.

use std::collections::BTreeMap;

use super::{Difference, Topic};
use crate::model::units;
use crate::snapshot::lines::size;

pub(super) type Env = BTreeMap<String, String>;

/// JAX's default pool: a fraction of total memory.
const JAX_FRACTION: f64 = 0.75;

/// Variables compared as they are, and what each does.
const PLAIN: &[(&str, &str)] = &[
    (
        "XLA_PYTHON_CLIENT_ALLOCATOR",
        "`platform` makes JAX allocate and free exactly what it asks for (slow, nothing \
         preallocated or cached); `default`/`bfc` use a preallocated pool, `cuda_async` a \
         stream-ordered pool that grows.",
    ),
    (
        "TF_FORCE_GPU_ALLOW_GROWTH",
        "With `true` TensorFlow starts small and grows its pool (never giving memory back); \
         otherwise it maps nearly all GPU memory at start, unless the program calls \
         set_memory_growth.",
    ),
    (
        "TF_GPU_ALLOCATOR",
        "`cuda_malloc_async` replaces TensorFlow's BFC pool with CUDA's stream-ordered \
         allocator, which grows as needed and fragments less.",
    ),
    (
        "TF_CUDA_MALLOC_ASYNC_SUPPORTED_PREALLOC",
        "Sets how much cuda_malloc_async preallocates at start (bytes; -1 is the default amount).",
    ),
    (
        "TF_ENABLE_GPU_GARBAGE_COLLECTION",
        "`false` stops TensorFlow from freeing whole free regions before giving up, so a \
         fragmented pool fails sooner.",
    ),
    (
        "PYTORCH_NO_CUDA_MEMORY_CACHING",
        "`1` turns PyTorch's caching allocator off: freed memory goes straight back to the \
         driver, so device memory follows live tensors (and runs slower).",
    ),
    (
        "CUPY_GPU_MEMORY_LIMIT",
        "Caps CuPy's memory pool (bytes or a percentage of total); without it the pool keeps \
         freed blocks and grows until the GPU is full.",
    ),
    (
        "CUDA_VISIBLE_DEVICES",
        "Selects and orders the GPUs the process sees: a different list puts the work on other \
         GPUs and changes which one is device 0.",
    ),
    (
        "CUDA_DEVICE_ORDER",
        "`PCI_BUS_ID` makes CUDA's device numbers follow nvidia-smi's; the default \
         FASTEST_FIRST may map device 0 to another GPU.",
    ),
    (
        "CUDA_MODULE_LOADING",
        "`EAGER` loads every kernel when the context is made, adding hundreds of MiB per \
         process (636 vs 274 MiB measured for PyTorch); `LAZY`, the default from CUDA 12.2 and \
         set by PyTorch, loads them on first use.",
    ),
];

/// PyTorch allocator variables, the first one set wins.
const TORCH_CONF: [&str; 3] = [
    "PYTORCH_ALLOC_CONF",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_HIP_ALLOC_CONF",
];

/// Allocator options in the order their effect is explained.
const TORCH_OPTIONS: &[(&str, &str)] = &[
    (
        "expandable_segments",
        "expandable_segments:True maps memory into one growable segment per stream, so less \
         reserved memory is stranded in partly used blocks and device memory stays closer to \
         what tensors use.",
    ),
    (
        "backend",
        "backend:cudaMallocAsync hands allocation to CUDA's stream-ordered allocator, and the \
         native cache's options (max_split_size_mb, garbage_collection_threshold) stop applying.",
    ),
    (
        "max_split_size_mb",
        "max_split_size_mb stops the cache from splitting blocks of that size or larger, which \
         limits fragmentation at the cost of reuse.",
    ),
    (
        "garbage_collection_threshold",
        "garbage_collection_threshold makes the cache free unused blocks once usage passes that \
         fraction, so reserved memory shrinks sooner.",
    ),
];

const PREALLOCATE: &str = "XLA_PYTHON_CLIENT_PREALLOCATE";
const FRACTION: [&str; 2] = ["XLA_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_MEM_FRACTION"];

/// JAX's pool settings: whether it preallocates, and what fraction of total.
pub(super) fn jax(env: &Env) -> (bool, f64) {
    let off = preallocate_off(env)
        || env
            .get("XLA_PYTHON_CLIENT_ALLOCATOR")
            .is_some_and(|v| v == "platform");
    let fraction = FRACTION
        .iter()
        .find_map(|k| env.get(*k)?.trim().parse::<f64>().ok())
        .filter(|f| (0.0..=1.0).contains(f))
        .unwrap_or(JAX_FRACTION);
    (!off, fraction)
}

/// Whether `XLA_PYTHON_CLIENT_PREALLOCATE` turns preallocation off.
fn preallocate_off(env: &Env) -> bool {
    matches!(
        env.get(PREALLOCATE).map(String::as_str),
        Some("false" | "False" | "0")
    )
}

#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]
pub(super) fn pool(fraction: f64, total: u64) -> u64 {
    (total as f64 * fraction) as u64
}

pub(super) fn pct(f: f64) -> String {
    format!("{:.0}%", f * 100.0)
}

fn shown(env: &Env, key: &str) -> String {
    env.get(key)
        .map_or_else(|| "unset".to_string(), |v| format!("{key}={v}"))
}

/// Differences in the settings of one matched pair of processes.
pub(super) fn settings(
    subject: &str,
    ea: &Env,
    eb: &Env,
    ta: Option<u64>,
    tb: Option<u64>,
    out: &mut Vec<Difference>,
) {
    let mut push = |name: &str, a: String, b: String, effect: String| {
        out.push(Difference::text(
            Topic::Setting,
            format!("{subject}: {name}"),
            a,
            b,
            effect,
        ));
    };
    let ((on_a, fa), (on_b, fb)) = (jax(ea), jax(eb));
    if preallocate_off(ea) != preallocate_off(eb) && on_a != on_b {
        let (on, off, env) = if on_a { ("A", "B", eb) } else { ("B", "A", ea) };
        let how = shown(env, PREALLOCATE);
        push(
            PREALLOCATE,
            shown(ea, PREALLOCATE),
            shown(eb, PREALLOCATE),
            format!(
                "JAX preallocates {} of total memory by default; {off} disabled it with {how}, \
                 so {off}'s device memory is what it uses, {on}'s is the pool.",
                pct(if on_a { fa } else { fb })
            ),
        );
    }
    let fraction = |e: &Env| {
        FRACTION
            .iter()
            .find(|k| e.contains_key(**k))
            .map_or("unset (0.75)".into(), |k| shown(e, k))
    };
    if (fa - fb).abs() > f64::EPSILON {
        let pool_of = |on, f, t: Option<u64>| match (on, t) {
            (false, _) => "no pool (preallocation off)".to_string(),
            (true, Some(t)) => format!(
                "{} of {} = {}",
                pct(f),
                units::compact(t),
                size(Some(pool(f, t)))
            ),
            (true, None) => format!("{} of an unknown total", pct(f)),
        };
        push(
            "JAX memory fraction",
            fraction(ea),
            fraction(eb),
            format!(
                "JAX preallocates this fraction of total memory: A's pool is {}, B's {}.",
                pool_of(on_a, fa, ta),
                pool_of(on_b, fb, tb)
            ),
        );
    }
    let conf = |e: &Env| {
        TORCH_CONF
            .iter()
            .find(|k| e.contains_key(**k))
            .map(|k| (*k, options(&e[*k])))
    };
    let (ca, cb) = (conf(ea), conf(eb));
    if ca.as_ref().map(|c| &c.1) != cb.as_ref().map(|c| &c.1) {
        let opts = |c: &Option<(&str, Env)>| c.as_ref().map_or(Env::new(), |c| c.1.clone());
        let (oa, ob) = (opts(&ca), opts(&cb));
        let effect = TORCH_OPTIONS
            .iter()
            .find(|(o, _)| oa.get(*o) != ob.get(*o))
            .map_or(
                "The caching allocator's options differ; they change how much reserved but \
                     unallocated memory the process holds.",
                |(_, e)| e,
            );
        let value =
            |c: &Option<(&str, Env)>, e: &Env| c.as_ref().map_or("unset".into(), |c| shown(e, c.0));
        push(
            "PyTorch allocator config",
            value(&ca, ea),
            value(&cb, eb),
            effect.to_string(),
        );
    }
    let special = |k: &str| k == PREALLOCATE || FRACTION.contains(&k) || TORCH_CONF.contains(&k);
    let mut keys: Vec<&String> = ea.keys().chain(eb.keys()).filter(|k| !special(k)).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        if ea.get(k) == eb.get(k) {
            continue;
        }
        let effect = PLAIN.iter().find(|(n, _)| n == k).map_or(
            "Set in one process's initial environment; gpumon knows no effect of it on memory.",
            |(_, e)| e,
        );
        push(k, shown(ea, k), shown(eb, k), effect.to_string());
    }
}

/// `opt:val,opt:val` into a map; option names trimmed, later repeats win.
fn options(conf: &str) -> Env {
    conf.split(',')
        .filter_map(|kv| {
            let (k, v) = kv.split_once(':')?;
            Some((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Env {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    #[test]
    fn jax_pool_settings() {
        assert_eq!(jax(&env(&[])), (true, 0.75));
        assert!(!jax(&env(&[(PREALLOCATE, "False")])).0);
        assert!(!jax(&env(&[("XLA_PYTHON_CLIENT_ALLOCATOR", "platform")])).0);
        assert_eq!(
            jax(&env(&[("XLA_PYTHON_CLIENT_MEM_FRACTION", ".5")])).1,
            0.5
        );
        assert_eq!(jax(&env(&[("XLA_CLIENT_MEM_FRACTION", "7")])).1, 0.75);
    }

    #[test]
    fn torch_conf_names_are_one_setting() {
        let a = env(&[("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")]);
        let b = env(&[("PYTORCH_ALLOC_CONF", " expandable_segments: True")]);
        let mut out = Vec::new();
        settings("torch", &a, &b, None, None, &mut out);
        assert!(out.is_empty(), "{out:?}");
        settings("torch", &a, &env(&[]), None, None, &mut out);
        assert_eq!(out.len(), 1);
        assert!(
            out[0].effect.starts_with("expandable_segments:True"),
            "{:?}",
            out[0]
        );
        assert_eq!(out[0].b, "unset");
    }
}
