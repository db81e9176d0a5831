//! Scripted distributed jobs for the job view's screen and end-to-end tests: a 2-rank DDP job
//! under torchrun whose rank 0 grows alone (both ranks probed, NCCL process groups), a notebook
//! that is no rank, and an 8-rank srun job one rank a GPU whose rank 3 holds more.
#![allow(dead_code, reason = "each test file uses the part it needs")]

use gpumon::sample::{Framework, Inside, Launcher, Pool, ProcessSample, Rank, Reading, Sample};
use gpumon::source::GpuSample;
use gpumon::source::scripted::build::{GIB, MIB, gpu, process, ranked};

/// 2025-11-22 12:01:40 UTC.
pub const T0: u64 = 1_763_812_900_000;
pub const DDP: &str = "torchrun:ddp-7f3a";
pub const SRUN: &str = "slurm:52222788.0";
/// Rank 0 and rank 1 of the DDP job, the notebook, rank 0 of the srun job (the others follow).
pub const RANK0: u32 = 1446;
pub const RANK1: u32 = 1447;
pub const NOTEBOOK: u32 = 2210;
pub const SRUN0: u32 = 3100;

const TOTAL: u64 = 81_559 * MIB;

fn h100(index: u32) -> GpuSample {
    GpuSample {
        name: "NVIDIA H100 80GB HBM3".into(),
        ..gpu(index, TOTAL, 0, 0)
    }
}

/// PyTorch's pool as the probe reports it.
fn pool(at_ms: u64, allocated: u64, reserved: u64) -> Reading<Pool> {
    Reading::Value(Pool {
        framework: Framework::Pytorch,
        version: Some("2.11.0".into()),
        at_ms,
        allocated: Some(allocated),
        reserved: Some(reserved),
        cached_free: Some(reserved - allocated),
        stranded: Some(0),
        largest_free_block: Some(reserved - allocated),
        largest_alloc: None,
        limit: None,
        peak_allocated: Some(allocated),
        peak_reserved: Some(reserved),
        alloc_retries: Some(0),
        ooms: Some(0),
    })
}

/// The DDP job's rank `rank` at tick `k`: rank 0 keeps part of every step's logits and grows by
/// 130 MiB a second, rank 1 stays at 9 GiB; 1.4 GiB of each is outside the pool (its CUDA context
/// and NCCL's buffers).
pub fn ddp_rank(rank: u32, k: u64) -> ProcessSample {
    let grown = if rank == 0 { k * 130 * MIB } else { 0 };
    let device = 9 * GIB + grown;
    let mut p = ranked(
        process(
            RANK0 + rank,
            &h100(rank),
            device,
            Framework::Pytorch,
            "python3 train_gpt2.py --ddp",
        ),
        DDP,
        rank,
        2,
    );
    let reserved = device - 1434 * MIB;
    p.pool = pool(T0 + k * 1000, reserved - 1200 * MIB, reserved);
    if let Some(r) = &mut p.rank {
        r.inside = Some(Inside {
            framework: Framework::Pytorch,
            backend: Some("nccl".into()),
            rank: Some(rank),
            world_size: Some(2),
            master: Some("127.0.0.1:29500".into()),
            run_id: Some("ddp-7f3a".into()),
        });
    }
    p
}

/// A notebook on GPU1: no launcher, no rank.
pub fn notebook() -> ProcessSample {
    process(
        NOTEBOOK,
        &h100(1),
        3 * GIB,
        Framework::Pytorch,
        "python3 -m ipykernel_launcher -f kernel-5.json",
    )
}

/// Rank `rank` of the 8-rank srun job, on GPU `rank`: 20 GiB each, rank 3 24 GiB.
pub fn srun_rank(rank: u32) -> ProcessSample {
    let device = if rank == 3 { 24 * GIB } else { 20 * GIB };
    let mut p = process(
        SRUN0 + rank,
        &h100(rank),
        device,
        Framework::Jax,
        "python3 -m maxtext.train configs/base.yml",
    );
    p.user = Reading::Value("bo".into());
    p.rank = Some(Rank {
        job: Some(SRUN.into()),
        launcher: Launcher::Slurm,
        rank: Some(rank),
        world_size: Some(8),
        local_rank: Some(rank),
        node: Some(0),
        problem: None,
        inside: None,
    });
    p
}

/// A sample of `gpus` H100s holding `processes` at tick `k` (1 GiB on each GPU besides them).
pub fn sample(k: u64, gpus: u32, processes: Vec<ProcessSample>) -> Sample {
    let gs = (0..gpus)
        .map(|i| {
            let g = h100(i);
            let used = processes
                .iter()
                .filter(|p| p.gpu_uuid == g.uuid)
                .filter_map(|p| p.device_memory.get())
                .sum::<u64>()
                + GIB;
            GpuSample {
                name: g.name.clone(),
                ..gpu(i, TOTAL, used.min(TOTAL - 480 * MIB), 480 * MIB)
            }
        })
        .collect();
    Sample {
        at_ms: T0 + k * 1000,
        gpus: gs,
        processes,
        ..Default::default()
    }
}

/// Tick `k` on two GPUs: the DDP job and the notebook.
pub fn ddp(k: u64) -> Sample {
    sample(k, 2, vec![ddp_rank(0, k), ddp_rank(1, k), notebook()])
}

/// Tick `k` on eight GPUs: the DDP job and the notebook, and the srun job one rank a GPU.
pub fn eight(k: u64) -> Sample {
    let mut processes = vec![ddp_rank(0, k), ddp_rank(1, k), notebook()];
    processes.extend((0..8).map(srun_rank));
    sample(k, 8, processes)
}
