//! Idle preallocated pools on scripted sequences: a JAX neighbour holding the GPU at a
//! device-full OOM is the OOM's first cause and first remedy, its pool is never called
//! releasable, and a JAX job with default preallocation that never fails raises no warning.

use crate::analysis::test_pools::{self, Second, T0, run, torch, with_env};
use crate::model::{Alert, Level};
use crate::oom::parse_all;
use crate::sample::{Framework, GpuSample, Pool, ProcessSample, Reading};
use crate::source::scripted::build::{GIB, MIB, gpu, process};

const TORCH_OOM: &str = "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 300.00 MiB is free. Of the allocated memory 18.50 GiB is allocated by PyTorch, and 20.00 MiB is reserved by PyTorch but unallocated.";

/// A JAX pool preallocated to `pool`, `in_use` of it used, its peak what it uses now.
fn jax_pool(in_use: u64, pool: u64) -> Pool {
    Pool {
        peak_allocated: Some(in_use),
        ..test_pools::jax(in_use, pool)
    }
}

/// A PyTorch pool with `allocated` in use and 20 MiB cached, its peak what it uses now.
fn torch_pool(allocated: u64) -> Pool {
    Pool {
        peak_allocated: Some(allocated),
        ..torch(allocated, allocated + 20 * MIB, 0, None, None)
    }
}

fn jax(g: &GpuSample, held: u64, pool: Option<Pool>, env: &[(&str, &str)]) -> ProcessSample {
    let serve = process(410, g, held, Framework::Jax, "python3 /srv/serve_jax.py");
    let mut p = with_env(serve, env);
    if let Some(pool) = pool {
        p.pool = Reading::Value(pool);
    }
    p
}

/// A PyTorch job (pid 420) loading weights at 1 GiB a second beside a JAX process whose
/// preallocated pool holds 59.4 GiB, until the GPU is full and it fails.
fn weights_beside_jax(jax_probed: bool, env: &[(&str, &str)]) -> Vec<Alert> {
    let jax_held = 59 * GIB + 400 * MIB;
    run((0..20u64).map(|k| {
        let torch = (2 * GIB + k * GIB).min(18 * GIB + 512 * MIB);
        let g = gpu(
            0,
            80 * GIB,
            (jax_held + torch + GIB).min(80 * GIB - 300 * MIB),
            0,
        );
        let pool = jax_probed.then(|| jax_pool(4 * MIB, jax_held));
        let mut t = process(
            420,
            &g,
            torch + 500 * MIB,
            Framework::Pytorch,
            "python3 load.py",
        );
        t.pool = Reading::Value(torch_pool(torch));
        let at = T0 + k * 1000;
        let failures = if k == 19 {
            let f = parse_all(TORCH_OOM.as_bytes()).remove(0);
            vec![f.into_failure(at, "load.out", Some(420))]
        } else {
            Vec::new()
        };
        let processes = vec![jax(&g, jax_held + 500 * MIB, pool, env), t];
        Second {
            failures,
            ..(g, processes).into()
        }
    }))
}

fn failure(alerts: &[Alert]) -> &Alert {
    alerts.iter().find(|a| a.level == Level::Failure).unwrap()
}

#[test]
fn a_jax_neighbours_idle_pool_is_the_oom_s_first_cause_and_first_remedy() {
    let alerts = weights_beside_jax(true, &[]);
    let f = failure(&alerts);
    assert_eq!(f.class, "device-full");
    assert!(
        f.title.starts_with(
            "pid 420 PyTorch OOM: device-full, pid 410 JAX (python3 serve_jax.py) holds 59.39 GiB preallocated, 4.00 MiB in use: restart it with XLA_PYTHON_CLIENT_PREALLOCATE=false;"
        ),
        "{}",
        f.title
    );
    assert!(!f.title.contains("leak"), "{}", f.title);
    let remedy = f.remedy.as_deref().unwrap();
    assert!(
        remedy.starts_with("Restart pid 410 with XLA_PYTHON_CLIENT_PREALLOCATE=false, or a smaller XLA_PYTHON_CLIENT_MEM_FRACTION, so its pool holds only what it uses: it holds 59.39 GiB it does not use, and a running JAX process never gives its pool back."),
        "{remedy}"
    );
    // Loading weights climbed too: said after the neighbour, never first.
    assert!(
        f.evidence[0].starts_with("the memory it needed sat idle"),
        "{:?}",
        f.evidence
    );
    // Before the failure: the idle pool was warned, and never called releasable.
    let warned = alerts
        .iter()
        .find(|a| a.class == "idle-preallocation")
        .expect("a warning before the OOM");
    assert_eq!(warned.pid, Some(410));
    // As soon as the GPU is seen filling (the loader's climb reaches its free memory soon), not
    // when it is already short.
    assert!(
        warned.at_ms + 5_000 <= f.at_ms,
        "warned {} ms before",
        f.at_ms - warned.at_ms
    );
    assert!(
        warned.title.starts_with(
            "pid 410 JAX holds 59.39 GiB idle in its preallocated pool while GPU0 fills"
        ),
        "{}",
        warned.title
    );
    assert!(
        alerts.iter().all(|a| !a.title.contains("could release")),
        "{alerts:?}"
    );
    assert!(alerts.iter().all(|a| a.class != "releasable-cache"));
}

#[test]
fn an_unprobed_jax_neighbour_is_named_from_its_framework_and_settings() {
    let alerts = weights_beside_jax(false, &[("XLA_PYTHON_CLIENT_MEM_FRACTION", ".75")]);
    let f = failure(&alerts);
    assert!(
        f.title
            .contains("pid 410 JAX (python3 serve_jax.py) holds 59.88 GiB preallocated, in use unknown (no allocator probe)"),
        "{}",
        f.title
    );
    assert!(
        f.remedy.as_deref().unwrap().contains(
            "a smaller XLA_PYTHON_CLIENT_MEM_FRACTION (now XLA_PYTHON_CLIENT_MEM_FRACTION=.75)"
        ),
        "{:?}",
        f.remedy
    );
    // Preallocation switched off: its memory is in use, not an idle pool; the OOM says so.
    let alerts = weights_beside_jax(false, &[("XLA_PYTHON_CLIENT_PREALLOCATE", "false")]);
    let f = failure(&alerts);
    assert!(!f.title.contains("pid 410 JAX"), "{}", f.title);
    assert!(
        f.remedy
            .as_deref()
            .unwrap()
            .starts_with("Find what keeps memory alive")
    );
}

#[test]
fn a_jax_job_with_default_preallocation_that_never_fails_raises_no_warning() {
    let alerts = run((0..120u64).map(|k| {
        // 60 GiB preallocated, its use swinging between 2 and 14 GiB; a small torch job beside
        // it, and 16 GiB of the GPU still free.
        let in_use = 2 * GIB + (k % 7) * 2 * GIB;
        let g = gpu(0, 80 * GIB, 64 * GIB, 0);
        let mut t = process(420, &g, 3 * GIB, Framework::Pytorch, "python3 eval.py");
        t.pool = Reading::Value(torch_pool(2 * GIB));
        let processes = vec![
            jax(
                &g,
                60 * GIB + 500 * MIB,
                Some(jax_pool(in_use, 60 * GIB)),
                &[],
            ),
            t,
        ];
        (g, processes)
    }));
    let warnings: Vec<&Alert> = alerts
        .iter()
        .filter(|a| matches!(a.level, Level::Suspected | Level::Failure))
        .collect();
    assert!(warnings.is_empty(), "{warnings:?}");
}
