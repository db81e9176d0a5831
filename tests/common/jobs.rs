//! Recordings of distributed jobs written from scripted samples: the ranks of one torchrun job on
//! a host, each on its GPU, one of them growing while the others stay flat.
#![allow(dead_code, reason = "each test file uses the part it needs")]

use std::path::{Path, PathBuf};

use gpumon::recording::{Header, Writer};
use gpumon::screen::FleetJob;
use gpumon::source::scripted::build::{GIB, MIB, gpu, machine, process, ranked};
use gpumon::source::{Framework, MachineInfo, Sample};

pub const T0: u64 = 1_763_812_900_000;
/// The job both hosts' ranks carry.
pub const JOB: &str = "torchrun:ddp-7f3a";

/// One rank of the job on a host.
#[derive(Debug, Clone, Copy)]
pub struct Rank {
    pub pid: u32,
    pub gpu: u32,
    pub rank: u32,
    /// Device memory at the start.
    pub gib: u64,
    /// MiB it gains every second.
    pub mib_per_s: u64,
}

/// Rank 0 on host A: 9 GiB, growing 130 MiB a second.
pub const RANK0: Rank = Rank {
    pid: 1446,
    gpu: 0,
    rank: 0,
    gib: 9,
    mib_per_s: 130,
};
/// Rank 1 on host B: 9 GiB, flat.
pub const RANK1: Rank = Rank {
    pid: 2210,
    gpu: 0,
    rank: 1,
    gib: 9,
    mib_per_s: 0,
};

/// `seconds` samples, a second apart, of `ranks` of `JOB` (world size `world`) on two GPUs.
pub fn samples(ranks: &[Rank], world: u32, seconds: u64) -> Vec<Sample> {
    (0..seconds)
        .map(|k| {
            let bytes = |r: &Rank| r.gib * GIB + k * r.mib_per_s * MIB;
            let used =
                |i: u32| ranks.iter().filter(|r| r.gpu == i).map(bytes).sum::<u64>() + GIB / 2;
            let gpus = vec![
                gpu(0, 80 * GIB, used(0), GIB / 2),
                gpu(1, 80 * GIB, used(1), GIB / 2),
            ];
            let processes = ranks
                .iter()
                .map(|r| {
                    let p = process(
                        r.pid,
                        &gpus[r.gpu as usize],
                        bytes(r),
                        Framework::Pytorch,
                        "python3 train.py --ddp",
                    );
                    ranked(p, JOB, r.rank, world)
                })
                .collect();
            Sample {
                at_ms: T0 + k * 1000,
                gpus,
                processes,
                ..Default::default()
            }
        })
        .collect()
}

/// The recording of `host` holding `ranks` for 15 s, written into `dir`.
pub fn recording(dir: &Path, host: &str, ranks: &[Rank], world: u32) -> PathBuf {
    write(dir, host, &samples(ranks, world, 15))
}

/// The recording of `host` made of `samples`, written into `dir`.
pub fn write(dir: &Path, host: &str, samples: &[Sample]) -> PathBuf {
    let path = dir.join(format!("{host}.ndjson"));
    let file = std::fs::File::create(&path).unwrap();
    let info = MachineInfo {
        host: host.into(),
        ..machine()
    };
    let mut w = Writer::new(file, &Header::new(info, 1000)).unwrap();
    for s in samples {
        w.sample(s).unwrap();
    }
    path
}

/// One job of two ranks, one a host, rank 0 the larger.
pub fn assert_one_job_across(jobs: &[FleetJob], names: [&str; 2]) {
    assert_eq!(jobs.len(), 1, "{jobs:#?}");
    let j = &jobs[0];
    assert_eq!((j.id.as_str(), j.world_size, j.ranks), (JOB, Some(2), 2));
    let hosts: Vec<(&str, usize)> = j.hosts.iter().map(|h| (h.name.as_str(), h.ranks)).collect();
    assert_eq!(hosts, [(names[0], 1), (names[1], 1)]);
    let rank0 = 9 * GIB + 14 * 130 * MIB;
    assert_eq!(j.device, rank0 + 9 * GIB);
    let l = j.largest.as_ref().unwrap();
    assert_eq!(
        (l.host.as_str(), l.rank, l.pid, l.device),
        (names[0], Some(0), RANK0.pid, rank0)
    );
    #[allow(clippy::cast_precision_loss)]
    let ratio = rank0 as f64 / (9 * GIB) as f64;
    assert!((l.ratio.unwrap() - ratio).abs() < 1e-9, "{l:?}");
    assert!(j.problems.is_empty(), "{:?}", j.problems);
}
