//! Inputs shared by the benchmarks: scripted samples of `gpus` GPUs and `procs` processes in all
//! (spread round-robin over the GPUs), and states warmed up to a full history window.
#![allow(dead_code)]

use gpumon::model::{Config, Event};
use gpumon::screen::{Msg, State};
use gpumon::source::scripted::build::{GIB, MIB, gpu, machine, process, ranked};
use gpumon::source::{Framework, Sample};

/// 2025-11-22 12:01:40 UTC.
pub const T0: u64 = 1_763_812_900_000;
/// The sizes benchmarked: (GPUs, processes in all).
pub const SIZES: [(u32, u32); 3] = [(1, 10), (8, 100), (8, 500)];

/// The defaults of the command line: one sample a second, ten minutes of history.
pub fn config() -> Config {
    Config {
        color: true,
        ..Config::new(1000, 600_000)
    }
}

const FRAMEWORKS: [Framework; 5] = [
    Framework::Pytorch,
    Framework::Jax,
    Framework::Tensorflow,
    Framework::Cupy,
    Framework::Other,
];

/// Tick `k`: every process's device memory moves a little each tick. With `churn`, every
/// process is new at every tick (PIDs never repeat).
pub fn sample(gpus: u32, procs: u32, k: u64, churn: bool) -> Sample {
    let total = 80 * GIB;
    let per_gpu = u64::from(procs.div_ceil(gpus).max(1));
    let share = total / 2 / per_gpu;
    let gs: Vec<_> = (0..gpus)
        .map(|i| gpu(i, total, total / 2 + (k % 7) * MIB, GIB / 2))
        .collect();
    let base = if churn {
        1000 + u32::try_from(k).unwrap() * procs
    } else {
        1000
    };
    let processes = (0..procs)
        .map(|i| {
            let g = &gs[(i % gpus) as usize];
            let fw = FRAMEWORKS[(i % 5) as usize];
            let device = share / 2 + (k + u64::from(i)) % 11 * MIB;
            process(
                base + i,
                g,
                device,
                fw,
                "python train.py --epochs 100 --batch-size 64",
            )
        })
        .collect();
    Sample {
        at_ms: T0 + k * 1000,
        gpus: gs,
        processes,
        failures: Vec::new(),
        notices: Vec::new(),
        events: Vec::new(),
        probes: Vec::new(),
        ras: None,
        logs: Vec::new(),
    }
}

/// A state fed `ticks` samples (a full ten-minute window with 600).
pub fn warm_state(gpus: u32, procs: u32, ticks: u64, churn: bool) -> State {
    let mut state = State::new(config());
    state.update(Msg::from(Event::Started(machine())));
    for k in 0..ticks {
        state.update(Msg::from(Event::Sample(sample(gpus, procs, k, churn))));
    }
    state
}

/// Tick `k` of 8 GPUs, one rank of one torchrun job on each: `sample(8, 8, k, false)` with every
/// process a rank.
pub fn ranks_sample(k: u64) -> Sample {
    let mut s = sample(8, 8, k, false);
    s.processes = s
        .processes
        .into_iter()
        .zip(0..)
        .map(|(p, rank)| ranked(p, "torchrun:bench", rank, 8))
        .collect();
    s
}

/// Tick `k` of 8 GPUs, one probed PyTorch rank of one torchrun job on each: `ranks_sample(k)`
/// with every process PyTorch and its probe's pool figures (allocated climbing a little each
/// tick, as a training step's do), what a probed 8-rank DDP job gives the model each tick.
pub fn probed_ranks_sample(k: u64) -> Sample {
    let mut s = ranks_sample(k);
    for p in &mut s.processes {
        let device = p.device_memory.get().unwrap_or(GIB);
        let allocated = device / 2 + (k % 13) * MIB;
        p.framework = gpumon::sample::Reading::Value(Framework::Pytorch);
        p.pool = gpumon::sample::Reading::Value(gpumon::sample::Pool {
            framework: Framework::Pytorch,
            version: Some("2.11.0".into()),
            at_ms: T0 + k * 1000 - 200,
            allocated: Some(allocated),
            reserved: Some(device * 3 / 4),
            cached_free: Some(device * 3 / 4 - allocated),
            stranded: Some(MIB),
            largest_free_block: None,
            largest_alloc: None,
            limit: None,
            peak_allocated: Some(device * 3 / 4),
            peak_reserved: Some(device * 3 / 4),
            alloc_retries: Some(0),
            ooms: Some(0),
        });
    }
    s
}

/// A state fed `ticks` of `ranks_sample`.
pub fn warm_ranks_state(ticks: u64) -> State {
    let mut state = State::new(config());
    state.update(Msg::from(Event::Started(machine())));
    for k in 0..ticks {
        state.update(Msg::from(Event::Sample(ranks_sample(k))));
    }
    state
}
