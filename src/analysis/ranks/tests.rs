//! A rank growing away from its job's others, through the pipeline on scripted jobs with real
//! sampling noise (one sample a second, the probe's file sometimes a second old, in-step
//! temporaries read at a random point of the step): the real DDP figures (rank 0 +130 MiB/s under
//! a 14 GiB cap, rank 1 flat at 9 GiB), warned 20 s before the cap after 30 s of growth, 8 ranks
//! with rank 3 alone growing, and silence on balanced healthy jobs (DDP, FSDP, ZeRO-like: warm-up
//! on every rank, caches filling alike, evaluation spikes on every rank, one jump, an exit, a
//! 1-rank job).

use crate::analysis::test_pools::{T0, probed, torch};
use crate::model::{Alert, Config, Event, Machine};
use crate::pipeline;
use crate::sample::{Framework, GpuSample, ProbeNews, ProcessSample, Reading, Sample};
use crate::source::scripted::build::{GIB, MIB, gpu, machine, process, ranked};

pub const JOB: &str = "torchrun:ddp";
/// The per-process cap of the real run (`set_per_process_memory_fraction`).
pub const CAP: u64 = 14 * GIB;
/// What a rank holds outside its pool: its CUDA context and NCCL's buffers (~1.3 GiB measured).
pub const OUTSIDE: u64 = 1800 * MIB;

/// One rank of a scripted job.
pub struct Spec {
    pub pid: u32,
    pub rank: u32,
    /// Its own GPU.
    pub gpu: u32,
    /// What stays allocated between steps at second `k`.
    pub floor: Box<dyn Fn(u64) -> u64>,
    /// The largest in-step temporaries over that floor.
    pub temps: u64,
    pub probed: bool,
    /// Listed until this second (it exits then).
    pub until: u64,
    /// Memory it also holds on other GPUs (index, bytes, from this second on; 0 bytes: NVML
    /// listed it there without a figure).
    pub elsewhere: Vec<(u32, u64, u64)>,
    pub framework: Framework,
    /// Whether the probe's file is sometimes a second old.
    pub stale: bool,
    /// What its pool strands in split blocks at second `k`.
    pub stranded: Box<dyn Fn(u64) -> u64>,
}

impl Spec {
    pub fn new(pid: u32, rank: u32, floor: impl Fn(u64) -> u64 + 'static) -> Self {
        Spec {
            pid,
            rank,
            gpu: rank,
            floor: Box::new(floor),
            temps: 256 * MIB,
            probed: true,
            until: u64::MAX,
            elsewhere: Vec::new(),
            framework: Framework::Pytorch,
            stale: true,
            stranded: Box::new(|_| 32 * MIB),
        }
    }
}

fn jitter(k: u64, salt: u32) -> u64 {
    (k.wrapping_mul(2_654_435_761) ^ u64::from(salt).wrapping_mul(40_503)) >> 5
}

/// What the probe reads of `s` at second `k`: its floor plus a random part of the step's
/// temporaries, and one second in four the second before's figures (its file not yet rewritten).
fn read(s: &Spec, k: u64) -> (u64, u64) {
    let k = if s.stale && k > 0 && jitter(k, s.pid).is_multiple_of(4) {
        k - 1
    } else {
        k
    };
    let floor = (s.floor)(k);
    (
        floor + s.temps / 4 * (jitter(k, s.pid + 7) % 5),
        floor + s.temps,
    )
}

/// Second `k` of a job of `world` ranks (`specs`) on `gpus` 80 GiB GPUs.
pub fn second(
    k: u64,
    world: u32,
    gpus: u32,
    specs: &[Spec],
) -> (Vec<GpuSample>, Vec<ProcessSample>) {
    let mut procs = Vec::new();
    let g = |i: u32| gpu(i, 80 * GIB, 0, 0);
    for s in specs.iter().filter(|s| k < s.until) {
        let (allocated, reserved) = read(s, k);
        let stranded = (s.stranded)(k);
        let reserved = reserved + stranded.saturating_sub(32 * MIB);
        let device = reserved + 64 * MIB + OUTSIDE;
        let p = if s.probed {
            let pool = torch(allocated, reserved + 64 * MIB, stranded, None, Some(CAP));
            probed(s.pid, &g(s.gpu), device, pool)
        } else {
            process(s.pid, &g(s.gpu), device, s.framework, "python3 train.py")
        };
        let mut p = ranked(p, JOB, s.rank, world);
        p.framework = Reading::Value(s.framework);
        for (i, bytes, from) in &s.elsewhere {
            if k >= *from {
                let mut other = p.clone();
                other.gpu_uuid = g(*i).uuid;
                other.device_memory = match bytes {
                    0 => Reading::na("not reported"),
                    b => Reading::Value(*b),
                };
                other.pool = Reading::na(crate::source::probe::NOT_PROBED);
                procs.push(other);
            }
        }
        procs.push(p);
    }
    let gpus = (0..gpus)
        .map(|i| {
            let used = procs
                .iter()
                .filter(|p| p.gpu_uuid == g(i).uuid)
                .filter_map(|p| p.device_memory.get())
                .sum();
            gpu(i, 80 * GIB, used, 0)
        })
        .collect();
    (gpus, procs)
}

/// Applies one sample a second through the pipeline; the machine after, its alerts oldest first.
pub fn run(
    secs: u64,
    world: u32,
    gpus: u32,
    specs: &[Spec],
    probes: &dyn Fn(u64) -> Vec<ProbeNews>,
) -> (Machine, Vec<Alert>) {
    let mut m = Machine::new(Config::new(1000, 600_000));
    pipeline::apply(&mut m, Event::Started(machine()));
    for k in 0..secs {
        let (gpus, processes) = second(k, world, gpus, specs);
        let sample = Sample {
            at_ms: T0 + k * 1000,
            gpus,
            processes,
            probes: probes(k),
            ..Default::default()
        };
        pipeline::apply(&mut m, Event::Sample(sample));
    }
    let alerts = m.alerts.iter().rev().cloned().collect();
    (m, alerts)
}

pub fn none(_: u64) -> Vec<ProbeNews> {
    Vec::new()
}

pub fn of<'a>(alerts: &'a [Alert], class: &str) -> Vec<&'a Alert> {
    alerts.iter().filter(|a| a.class == class).collect()
}

/// Warnings of any class: a healthy job gets none.
pub fn warnings(alerts: &[Alert]) -> Vec<&Alert> {
    alerts.iter().filter(|a| a.level.warns()).collect()
}

/// Flat at `at` after `from`, climbing `rate` bytes a second from second `start`.
pub fn leaking(at: u64, start: u64, rate: u64) -> impl Fn(u64) -> u64 {
    move |k| at + k.saturating_sub(start) * rate
}

/// Every rank at `base`, warming up by `warm` in its first step (gradients, buckets and the
/// optimizer's state at once), with `temps` in each step and
/// an evaluation every 60 s on every rank (a spike of `eval` for 6 s, its start a second apart
/// from rank to rank).
fn healthy(world: u32, base: u64, warm: u64, temps: u64, eval: u64) -> Vec<Spec> {
    (0..world)
        .map(|r| {
            let floor = move |k: u64| {
                let warmed = base + if k >= 2 { warm } else { 0 };
                let t = (k + u64::from(r) % 2) % 60;
                warmed + if (40..46).contains(&t) { eval } else { 0 }
            };
            let mut s = Spec::new(4000 + r, r, floor);
            s.temps = temps;
            s
        })
        .collect()
}

#[test]
fn balanced_healthy_jobs_raise_nothing() {
    // DDP: 2 ranks, warm-up and an evaluation spike on each.
    let ddp = healthy(2, 2 * GIB, 5 * GIB, 256 * MIB, 3 * GIB);
    // FSDP: 4 equal shards.
    let fsdp = healthy(4, 3 * GIB, 2 * GIB, 256 * MIB, GIB);
    // ZeRO-like: 8 equal shards.
    let zero = healthy(8, 6 * GIB, 2 * GIB, 256 * MIB, GIB);
    for (name, specs) in [("ddp", ddp), ("fsdp", fsdp), ("zero", zero)] {
        let world = specs.len() as u32;
        let (m, alerts) = run(300, world, world, &specs, &none);
        assert!(warnings(&alerts).is_empty(), "{name}: {alerts:#?}");
        assert_eq!(m.jobs.len(), 1);
    }
}

#[test]
fn in_step_noise_near_the_cap_is_no_rank_growing_alone() {
    // Each step's temporaries read at a random point of the step, as large as a FSDP all-gather
    // beside its shard or as the logits of a large vocabulary, near the cap: a rank's own leak
    // rule may take a run of high readings for a climb, but it is no rank growing alone.
    let fsdp = healthy(4, 3 * GIB, 2 * GIB, 4 * GIB, GIB);
    let zero = healthy(8, 9 * GIB, 2 * GIB, GIB, GIB);
    for (name, specs) in [("fsdp", fsdp), ("zero", zero)] {
        let world = specs.len() as u32;
        let (_, alerts) = run(600, world, world, &specs, &none);
        assert!(
            of(&alerts, super::GROWS_ALONE).is_empty(),
            "{name}: {alerts:#?}"
        );
    }
}

#[test]
fn caches_filling_alike_unprobed_raise_nothing() {
    // 8 unprobed ranks whose caches fill together for 40 s, each a little apart.
    let specs: Vec<Spec> = (0..8)
        .map(|r| {
            let mut s = Spec::new(5000 + r, r, move |k: u64| {
                4 * GIB + k.min(40) * (40 + u64::from(r)) * MIB
            });
            s.probed = false;
            s
        })
        .collect();
    let (_, alerts) = run(120, 8, 8, &specs, &none);
    assert!(of(&alerts, super::GROWS_ALONE).is_empty(), "{alerts:#?}");
    assert!(warnings(&alerts).is_empty(), "{alerts:#?}");
}

#[test]
fn one_jump_then_flat_is_not_growing_alone() {
    // Rank 0 loads an evaluation model once (3 GiB), then stays there.
    let specs = [
        Spec::new(1446, 0, |k| if k < 30 { 6 * GIB } else { 9 * GIB }),
        Spec::new(1447, 1, |_| 6 * GIB),
    ];
    let (_, alerts) = run(90, 2, 2, &specs, &none);
    assert!(warnings(&alerts).is_empty(), "{alerts:#?}");
}

#[test]
fn a_rank_that_exits_leaves_no_false_alarm() {
    // Three ranks at work; rank 2 exits, freeing its memory as it goes.
    let mut specs = healthy(3, 2 * GIB, 6 * GIB, 256 * MIB, 0);
    specs[2].floor = Box::new(|k| 8 * GIB - k.saturating_sub(30).min(10) * 500 * MIB);
    specs[2].until = 41;
    let (_, alerts) = run(90, 3, 3, &specs, &none);
    assert!(warnings(&alerts).is_empty(), "{alerts:#?}");
    // Two ranks: rank 1 dies, rank 0 waits in its collective, flat, then its own teardown.
    let mut specs = healthy(2, 6 * GIB, 0, 256 * MIB, 0);
    specs[1].until = 40;
    let (m, alerts) = run(100, 2, 2, &specs, &none);
    assert!(warnings(&alerts).is_empty(), "{alerts:#?}");
    assert!(m.jobs[0].ranks[1].exited_ms.is_some());
}
