//! One sentence of what to do, per class and framework, taking the process's settings into account.

use crate::analysis::classify::{Class, Verdict, preallocating};
use crate::analysis::context::{Context, Other};
use crate::oom::failure::{Dialect, Failure};
use crate::sample::Framework;

/// The dialect whose knobs apply to a process running `framework`.
pub fn dialect_of(framework: Framework) -> Option<Dialect> {
    match framework {
        Framework::Pytorch => Some(Dialect::Pytorch),
        Framework::Tensorflow => Some(Dialect::Tensorflow),
        Framework::Jax => Some(Dialect::Jax),
        Framework::Cupy => Some(Dialect::Cupy),
        Framework::Other => None,
    }
}

/// The framework whose knobs apply: the message's wording, else the process's libraries.
fn framework(f: &Failure, ctx: &Context) -> Option<Dialect> {
    match (f.source, ctx.framework) {
        (Some(Dialect::Cuda) | None, Some(Framework::Pytorch)) => Some(Dialect::Pytorch),
        (Some(Dialect::Cuda) | None, Some(Framework::Tensorflow)) => Some(Dialect::Tensorflow),
        (Some(Dialect::Cuda) | None, Some(Framework::Jax)) => Some(Dialect::Jax),
        (Some(Dialect::Cuda) | None, Some(Framework::Cupy)) => Some(Dialect::Cupy),
        (Some(Dialect::Tensorflow), Some(Framework::Jax)) => Some(Dialect::Jax),
        (d, _) => d,
    }
}

fn setting<'a>(ctx: &'a Context, key: &str) -> Option<&'a str> {
    ctx.settings.as_ref()?.get(key).map(String::as_str)
}

/// The PyTorch allocator variable in force and its value (the first one set wins).
fn torch_conf(ctx: &Context) -> Option<(&'static str, &str)> {
    ["PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"]
        .into_iter()
        .find_map(|k| setting(ctx, k).map(|v| (k, v)))
}

pub fn remedy(f: &Failure, v: &Verdict, ctx: &Context) -> String {
    let fw = framework(f, ctx);
    match v.class {
        Class::Fragmentation => defragment(fw, ctx),
        Class::Split => join_free(fw, ctx),
        Class::Leak => leak_remedy(f.pid.unwrap_or_default(), ctx.framework),
        Class::PoolLimit => raise_limit(f.numbers.allowed.map(|a| a.to_string()), fw, ctx),
        Class::DeviceFull if !v.holders.is_empty() => format!(
            "Free or move the other processes on this GPU: {}.",
            v.holders
                .iter()
                .map(Other::describe)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Class::DeviceFull => match (f.numbers.request, f.numbers.total) {
            (Some(r), Some(t)) if r.bytes > t.bytes => {
                "The request is larger than the whole GPU: shard the model or reduce the batch size.".into()
            }
            _ => "Reduce the batch or model size, or free the GPU of other work (see its process list)."
                .into(),
        },
        Class::Driver => "The driver refused although enough memory was free: check for a MIG, vGPU or WDDM limit; restarting the process clears driver-level fragmentation.".into(),
        Class::Unknown => match fw {
            Some(Dialect::Jax | Dialect::Tensorflow) if preallocating(f, ctx) => {
                "Keep the allocator's dump in the log (TF_CPP_MIN_LOG_LEVEL=0) or run with XLA_PYTHON_CLIENT_ALLOCATOR=platform / TF_FORCE_GPU_ALLOW_GROWTH=true so gpumon can compare the request with free memory.".into()
            }
            _ if f.numbers.request_unreadable.is_some() => {
                "The size the program asked for was computed wrong (an overflow, or a negative or NaN dimension): check the shapes of the tensor it allocates at that line.".into()
            }
            Some(Dialect::Pytorch) if f.numbers.request.is_none() => {
                "Upgrade PyTorch: this version's message carries no numbers to diagnose.".into()
            }
            _ => "Compare the GPU's free memory and its other processes at the time of the failure.".into(),
        },
    }
}

/// Whether the process's PyTorch allocator runs with expandable segments: its free blocks are
/// then never counted as inactive split bytes.
pub fn expandable(ctx: &Context) -> bool {
    torch_conf(ctx).is_some_and(|(_, v)| {
        v.to_ascii_lowercase()
            .replace(' ', "")
            .contains("expandable_segments:true")
    })
}

pub fn defragment(fw: Option<Dialect>, ctx: &Context) -> String {
    match fw {
        Some(Dialect::Pytorch) => match torch_conf(ctx) {
            Some((var, _)) if expandable(ctx) => format!(
                "{var} already has expandable_segments:True: add max_split_size_mb:<MB> so large blocks are not split, or garbage_collection_threshold:0.8 to release cached blocks sooner."
            ),
            _ => "Set PYTORCH_ALLOC_CONF=expandable_segments:True (PYTORCH_CUDA_ALLOC_CONF for torch < 2.9) so the cache grows in place instead of stranding memory in split blocks.".into(),
        },
        Some(Dialect::Tensorflow | Dialect::Jax) => {
            if setting(ctx, "TF_GPU_ALLOCATOR") == Some("cuda_malloc_async") {
                "TF_GPU_ALLOCATOR=cuda_malloc_async is already set: lower the peak (smaller batch) or restart the process to start from an unfragmented pool.".into()
            } else {
                "Set TF_GPU_ALLOCATOR=cuda_malloc_async so CUDA's stream-ordered pool replaces the fragmented BFC pool.".into()
            }
        }
        _ => "Lower the peak (smaller batch) or restart the process to start from unfragmented memory.".into(),
    }
}

/// A split: the pool's free part and the GPU's free memory would have fit together, neither
/// alone (not fragmentation: the remedy says what joins the two, or lowers the peak).
fn join_free(fw: Option<Dialect>, ctx: &Context) -> String {
    match fw {
        Some(Dialect::Pytorch) if !expandable(ctx) => "Lower the peak (a smaller batch), or call torch.cuda.empty_cache() before the step that peaks so the cache's free part goes back to the GPU; with PYTORCH_ALLOC_CONF=expandable_segments:True (PYTORCH_CUDA_ALLOC_CONF for torch < 2.9) a segment grows into the GPU's free memory, so the two can serve one request.".into(),
        Some(Dialect::Pytorch) => defragment(fw, ctx),
        _ => "Lower the peak (a smaller batch): the pool's free part and the GPU's free memory together would have fit, neither alone.".into(),
    }
}

/// `allowed`: PyTorch's per-process cap as its message printed it, when known.
pub fn raise_limit(allowed: Option<String>, fw: Option<Dialect>, ctx: &Context) -> String {
    let now = |k: &str| setting(ctx, k).map_or_else(String::new, |v| format!(" (now {v})"));
    match fw {
        Some(Dialect::Pytorch) => {
            let allowed = allowed.map_or_else(String::new, |a| format!(" (now {a} allowed)"));
            format!("Raise the fraction given to torch.cuda.set_per_process_memory_fraction{allowed}.")
        }
        Some(Dialect::Jax) => {
            let var = ["XLA_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_MEM_FRACTION"]
                .into_iter()
                .find(|k| setting(ctx, k).is_some());
            match var {
                Some(k) => format!("Raise {k}{} or set XLA_PYTHON_CLIENT_PREALLOCATE=false so the pool can grow.", now(k)),
                None => "Raise XLA_CLIENT_MEM_FRACTION (default .75 of the GPU) or set XLA_PYTHON_CLIENT_PREALLOCATE=false so the pool can grow.".into(),
            }
        }
        Some(Dialect::Cupy) => format!(
            "Raise CUPY_GPU_MEMORY_LIMIT{} or the limit given to cupy.get_default_memory_pool().set_limit.",
            now("CUPY_GPU_MEMORY_LIMIT")
        ),
        _ => "Raise the memory_limit given to tf.config.set_logical_device_configuration, or lower the batch size to fit the pool.".into(),
    }
}

/// The remedy for a leak: never an allocator setting.
pub fn leak_remedy(pid: u32, fw: Option<Framework>) -> String {
    leak_remedy_at(pid, None, fw)
}

/// The remedy for a leak whose kept tensor a block map names at `site` ("keepers.py:11 remember
/// (7.99 GiB, 667 blocks)"), where allocation history is recorded; in `fw`'s words (JAX keeps
/// arrays, PyTorch tensors).
pub fn leak_remedy_at(pid: u32, site: Option<&str>, fw: Option<Framework>) -> String {
    let drop = match fw {
        Some(Framework::Jax) => {
            "keep jax.device_get copies of what you need, del the arrays, or a bounded window"
        }
        _ => "keep .item() or .detach().cpu() copies, or a bounded window",
    };
    match site {
        Some(site) => format!(
            "Find what keeps memory alive from step to step in pid {pid}, starting at {site}, the line whose blocks climb in its block maps: drop what it keeps ({drop}). An allocator setting will not help."
        ),
        None => format!(
            "{} An allocator setting will not help.",
            find_what_keeps(pid, fw)
        ),
    }
}

/// Where to look for what a leak keeps, in `fw`'s words.
pub fn find_what_keeps(pid: u32, fw: Option<Framework>) -> String {
    match fw {
        Some(Framework::Jax) => format!(
            "Find what keeps memory alive from step to step in pid {pid}: arrays kept in a list or a dict, results of jitted steps stored beyond the step, caches keyed by shape; drop them (del, or keep jax.device_get copies)."
        ),
        _ => format!(
            "Find what keeps memory alive from step to step in pid {pid}: outputs or losses kept in a list, tensors stored without .detach() or .item(), caches keyed by shape, a context that only grows."
        ),
    }
}
