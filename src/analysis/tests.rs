//! Alerts through `State::update`: failures classified against the state, warnings from history.

use crate::analysis::test_pools::with_env;
use crate::model::Level;
use crate::model::{Config, Event};
use crate::oom::failure::Failure;
use crate::oom::parse_all;
use crate::sample::{Framework, GpuSample, ProcessSample, Reading, Sample};
use crate::screen::{Msg, State};
use crate::source::scripted::build::{GIB, gpu, machine, process};

fn state() -> State {
    let mut s = State::new(Config::new(1000, 600_000));
    s.update(Msg::from(Event::Started(machine())));
    s
}

fn sample(
    at_ms: u64,
    gpus: Vec<GpuSample>,
    processes: Vec<ProcessSample>,
    failures: Vec<Failure>,
) -> Msg {
    Msg::from(Event::Sample(Sample {
        at_ms,
        gpus,
        processes,
        failures,
        ..Default::default()
    }))
}

fn failure(pid: u32, line: &str) -> Failure {
    parse_all(line.as_bytes())
        .remove(0)
        .into_failure(5_000, "job.out", Some(pid))
}

#[test]
fn failure_maps_through_cuda_visible_devices_and_names_others() {
    let mut s = state();
    let (g0, g1) = (
        gpu(0, 80 * GIB, 10 * GIB, GIB / 2),
        gpu(1, 80 * GIB, 79 * GIB, GIB / 2),
    );
    let me = with_env(
        process(100, &g1, 18 * GIB, Framework::Pytorch, "python train.py"),
        &[("CUDA_VISIBLE_DEVICES", "1")],
    );
    let other = process(200, &g1, 60 * GIB, Framework::Pytorch, "python serve.py");
    let oom = "CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 500.00 MiB is free. Of the allocated memory 17.00 GiB is allocated by PyTorch, and 10.00 MiB is reserved by PyTorch but unallocated.";
    s.update(sample(
        5_000,
        vec![g0, g1.clone()],
        vec![me, other],
        vec![failure(100, oom)],
    ));
    let a = &s.machine().alerts[0];
    assert_eq!(a.level, Level::Failure);
    assert_eq!(a.class, "device-full");
    assert_eq!(a.confidence.as_deref(), Some("certain"));
    assert_eq!(a.gpu_uuid.as_deref(), Some(g1.uuid.as_str()));
    assert!(
        a.title.starts_with("pid 100 PyTorch OOM: device-full"),
        "{}",
        a.title
    );
    assert!(
        a.evidence.iter().any(|e| e == "the process held 18.00 GiB"),
        "{:?}",
        a.evidence
    );
    assert_eq!(
        a.remedy.as_deref(),
        Some("Free or move the other processes on this GPU: pid 200 python serve.py (60.00 GiB).")
    );
    assert_eq!(s.machine().gpu(&g1.uuid).unwrap().alerts, 1);
}

#[test]
fn gpu_uuid_prefix_in_cuda_visible_devices() {
    let mut s = state();
    let gpus = vec![gpu(0, 80 * GIB, 0, 0), gpu(1, 80 * GIB, 0, 0)];
    s.update(sample(1_000, gpus.clone(), vec![], vec![]));
    assert_eq!(
        crate::analysis::context::map_ordinal(1, Some("GPU-00000000,GPU-00000001"), s.machine()),
        Some(gpus[1].uuid.clone())
    );
    assert_eq!(
        crate::analysis::context::map_ordinal(1, Some("0,bad,1"), s.machine()),
        None
    );
    assert_eq!(
        crate::analysis::context::map_ordinal(0, Some(""), s.machine()),
        None
    );
    assert_eq!(
        crate::analysis::context::map_ordinal(1, None, s.machine()),
        Some(gpus[1].uuid.clone())
    );
}

#[test]
fn jax_failure_is_not_compared_with_nvml_free_under_preallocation() {
    let oom = "XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 7406166528 bytes.";
    let g = gpu(0, 80 * GIB, 60 * GIB, GIB / 2);
    let mut s = state();
    let p = with_env(
        process(300, &g, 60 * GIB, Framework::Jax, "python jax.py"),
        &[],
    );
    s.update(sample(
        5_000,
        vec![g.clone()],
        vec![p.clone()],
        vec![failure(300, oom)],
    ));
    let a = s
        .machine()
        .alerts
        .iter()
        .find(|a| a.level == Level::Failure)
        .unwrap();
    assert_eq!(
        a.class, "unknown",
        "19.5 GiB free must not make it driver-level"
    );
    let mut s = state();
    let p = with_env(p, &[("XLA_PYTHON_CLIENT_ALLOCATOR", "platform")]);
    s.update(sample(5_000, vec![g], vec![p], vec![failure(300, oom)]));
    let a = s
        .machine()
        .alerts
        .iter()
        .find(|a| a.level == Level::Failure)
        .unwrap();
    assert_eq!(
        (a.class.as_str(), a.confidence.as_deref()),
        ("driver", Some("likely"))
    );
}

#[test]
fn preallocation_is_raised_once_with_its_variable() {
    let mut s = state();
    let g = gpu(0, 80 * GIB, 61 * GIB, GIB / 2);
    let p = with_env(
        process(400, &g, 60 * GIB, Framework::Jax, "python jax.py"),
        &[("XLA_CLIENT_MEM_FRACTION", ".75")],
    );
    for t in 1..=3 {
        s.update(sample(t * 1000, vec![g.clone()], vec![p.clone()], vec![]));
    }
    let pre: Vec<_> = s
        .machine()
        .alerts
        .iter()
        .filter(|a| a.class == "preallocation")
        .collect();
    assert_eq!(pre.len(), 1);
    // It crowds no one (the only process on the GPU): information, not a warning.
    assert_eq!(pre[0].level, Level::Info);
    assert!(
        pre[0]
            .evidence
            .iter()
            .any(|e| e == "set in its initial environment: XLA_CLIENT_MEM_FRACTION=.75"),
        "{:?}",
        pre[0].evidence
    );
    assert!(
        pre[0]
            .remedy
            .as_deref()
            .unwrap()
            .contains("XLA_PYTHON_CLIENT_PREALLOCATE=false")
    );
}

#[test]
fn steady_processes_and_big_vms_raise_nothing() {
    let mut s = state();
    let g = gpu(0, 80 * GIB, 20 * GIB, GIB / 2);
    let mut p = process(500, &g, 20 * GIB, Framework::Pytorch, "python x.py");
    p.vms = Reading::Value(2000 * GIB);
    for t in 1..=90 {
        s.update(sample(t * 1000, vec![g.clone()], vec![p.clone()], vec![]));
    }
    assert!(s.machine().alerts.is_empty(), "{:?}", s.machine().alerts);
}

#[test]
fn growth_step_larger_than_free() {
    let mut s = state();
    for (t, dev) in [(1, 10), (12, 10), (13, 40), (14, 70), (15, 70)] {
        let g = gpu(0, 80 * GIB, (dev + 5) * GIB, GIB / 2);
        let p = process(600, &g, dev * GIB, Framework::Pytorch, "python grow.py");
        s.update(sample(t * 1000, vec![g], vec![p], vec![]));
    }
    let a: Vec<_> = s
        .machine()
        .alerts
        .iter()
        .filter(|a| a.class == "growth-step")
        .collect();
    assert_eq!(a.len(), 1);
    assert!(a[0].title.contains("steps of 30.00 GiB"), "{}", a[0].title);
}

#[test]
fn start_up_allocations_and_stopped_growth_are_not_growth_steps() {
    // A pool grabbed at start (as JAX's 59 GiB in the real demo), then another process taking
    // the rest for a moment: the first process is not "growing in steps".
    let mut s = state();
    for t in 1..=80u64 {
        let other = if t > 70 { 19 * GIB } else { 0 };
        let g = gpu(0, 80 * GIB, 60 * GIB + other, GIB / 2);
        let jax = process(677, &g, 60 * GIB, Framework::Jax, "python jax.py");
        let mut procs = vec![jax];
        if t > 70 {
            procs.push(process(
                873,
                &g,
                other,
                Framework::Pytorch,
                "python fill.py",
            ));
        }
        s.update(sample(t * 1000, vec![g], procs, vec![]));
    }
    assert!(
        !s.machine().alerts.iter().any(|a| a.class == "growth-step"),
        "{:?}",
        s.machine().alerts
    );
}

#[test]
fn one_jump_is_not_a_trend_towards_full() {
    let mut s = state();
    for t in 0..=40u64 {
        // A 50 GiB pool taken at t=5, flat afterwards: no "full in N s".
        let used = if t >= 5 { 70 * GIB } else { 20 * GIB };
        let g = gpu(0, 80 * GIB, used, GIB / 2);
        let p = process(701, &g, used, Framework::Jax, "python jax.py");
        s.update(sample(1_000 + t * 1000, vec![g], vec![p], vec![]));
    }
    assert!(
        !s.machine().alerts.iter().any(|a| a.class == "time-to-full"),
        "{:?}",
        s.machine().alerts
    );
}

#[test]
fn time_to_full_needs_sustained_growth() {
    let mut s = state();
    // Its first 10 s on the GPU are its start (filling::STARTUP_MS), then 30 s of growth.
    for t in 0..=60u64 {
        // +200 MiB/s with 40 GiB free at first: full in a few minutes.
        let used = 20 * GIB + t * 200 * (1 << 20);
        let g = gpu(0, 80 * GIB, used, GIB / 2);
        let p = process(700, &g, used, Framework::Pytorch, "python leak.py");
        s.update(sample(1_000 + t * 1000, vec![g], vec![p], vec![]));
    }
    let a: Vec<_> = s
        .machine()
        .alerts
        .iter()
        .filter(|a| a.class == "time-to-full")
        .collect();
    assert_eq!(a.len(), 1, "{:?}", s.machine().alerts);
    assert!(
        a[0].remedy
            .as_deref()
            .unwrap()
            .starts_with("pid 700 grows fastest")
    );
}

#[test]
fn exit_while_growing_on_a_full_gpu_without_a_log() {
    let mut s = state();
    for (t, dev) in [(1, 70), (2, 74)] {
        let g = gpu(0, 80 * GIB, (dev + 5) * GIB, GIB / 2);
        let p = process(800, &g, dev * GIB, Framework::Pytorch, "python big.py");
        s.update(sample(t * 1000, vec![g], vec![p], vec![]));
    }
    s.update(sample(
        3_000,
        vec![gpu(0, 80 * GIB, 5 * GIB, GIB / 2)],
        vec![],
        vec![],
    ));
    let a: Vec<_> = s
        .machine()
        .alerts
        .iter()
        .filter(|a| a.class == "exit-no-log")
        .collect();
    assert_eq!(a.len(), 1, "{:?}", s.machine().alerts);
    assert!(
        a[0].title
            .contains("possible allocation failure, no log seen")
    );

    // With a failure in its log, or with room to grow, nothing is suspected.
    let mut s = state();
    let oom = "RuntimeError: CUDA error: out of memory";
    for (t, dev, f) in [(1, 70, vec![]), (2, 74, vec![failure(800, oom)])] {
        let g = gpu(0, 80 * GIB, (dev + 5) * GIB, GIB / 2);
        let p = process(800, &g, dev * GIB, Framework::Pytorch, "python big.py");
        s.update(sample(t * 1000, vec![g], vec![p], f));
    }
    s.update(sample(
        3_000,
        vec![gpu(0, 80 * GIB, 5 * GIB, GIB / 2)],
        vec![],
        vec![],
    ));
    assert!(s.machine().alerts.iter().all(|a| a.class != "exit-no-log"));
}

#[test]
fn other_processes_are_named_by_their_program_and_script() {
    use crate::analysis::context::short_command;
    assert_eq!(
        short_command("python3 /work/main/scripts/gpu/jax_oom.py prealloc"),
        "python3 jax_oom.py"
    );
    assert_eq!(
        short_command("/usr/bin/python -u train.py --lr 1"),
        "python train.py"
    );
    assert_eq!(short_command("./nbody -benchmark"), "nbody");
    assert_eq!(
        short_command("python -m torch.distributed.run --nproc 8 train.py"),
        "python -m torch.distributed.run"
    );
    assert_eq!(short_command("sh -c cat x; exit 3"), "sh -c cat");
    assert_eq!(short_command(""), "");
    assert_eq!(short_command(&"x".repeat(100)).chars().count(), 32);
}
