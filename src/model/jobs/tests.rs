//! Jobs grouped from their ranks: side by side, the one that differs, and ranks that lie.

use crate::model::{Config, Machine};
use crate::sample::{Framework, ProcessSample, Sample};
use crate::source::scripted::build::{GIB, MIB, gpu, process, ranked};

const T0: u64 = 1_763_812_900_000;

fn machine_with(samples: impl IntoIterator<Item = Sample>) -> Machine {
    let mut m = Machine::new(Config::new(1000, 600_000));
    for s in samples {
        m.ingest(s);
    }
    m
}

fn sample(at_ms: u64, processes: Vec<ProcessSample>) -> Sample {
    Sample {
        at_ms,
        gpus: vec![
            gpu(0, 80 * GIB, 30 * GIB, GIB),
            gpu(1, 80 * GIB, 30 * GIB, GIB),
        ],
        processes,
        ..Default::default()
    }
}

fn torch(pid: u32, gpu_index: u32, bytes: u64, job: &str, rank: u32) -> ProcessSample {
    let g = gpu(gpu_index, 80 * GIB, 0, 0);
    ranked(
        process(pid, &g, bytes, Framework::Pytorch, "python3 train.py"),
        job,
        rank,
        2,
    )
}

/// Rank 0 on GPU0 growing by 130 MiB a second, rank 1 on GPU1 flat.
fn ddp(k: u64) -> Vec<ProcessSample> {
    vec![
        torch(1446, 0, 9 * GIB + k * 130 * MIB, "torchrun:ddp", 0),
        torch(1447, 1, 9 * GIB, "torchrun:ddp", 1),
    ]
}

#[test]
fn ranks_of_one_job_are_one_job_side_by_side_and_the_growing_one_stands_out() {
    let m = machine_with((0..15).map(|k| sample(T0 + k * 1000, ddp(k))));
    assert_eq!(m.jobs.len(), 1);
    let j = &m.jobs[0];
    assert_eq!(j.id, "torchrun:ddp");
    assert_eq!(j.world_size, Some(2));
    let ranks: Vec<Option<u32>> = j.ranks.iter().map(|r| r.rank).collect();
    assert_eq!(ranks, [Some(0), Some(1)]);
    assert_eq!(j.gpus.len(), 2);
    assert_eq!(j.device, 18 * GIB + 14 * 130 * MIB);
    assert!(j.problems.is_empty(), "{:?}", j.problems);
    let i = j.imbalance.as_ref().unwrap();
    assert_eq!((i.pid, i.rank), (1446, Some(0)));
    assert!(i.grows_alone);
    assert!(i.ratio > 1.0);
    let of = m.job_of(1447).map(|(j, r)| (j.id.as_str(), r.rank));
    assert_eq!(of, Some(("torchrun:ddp", Some(1))));
    assert!(m.job_of(1).is_none());
}

#[test]
fn a_balanced_job_grows_alone_nowhere() {
    let both = |k: u64| {
        vec![
            torch(10, 0, 9 * GIB + k * 100 * MIB, "j", 0),
            torch(11, 1, 9 * GIB + k * 100 * MIB, "j", 1),
        ]
    };
    let m = machine_with((0..15).map(|k| sample(T0 + k * 1000, both(k))));
    let i = m.jobs[0].imbalance.as_ref().unwrap();
    assert!(!i.grows_alone);
    assert!((i.ratio - 1.0).abs() < 1e-9);
}

#[test]
fn a_rank_on_another_rank_gpu_is_memory_elsewhere_and_its_own_gpu_is_where_it_holds_most() {
    let procs = vec![
        torch(20, 0, 1924 * MIB, "j", 0),
        torch(21, 1, 1924 * MIB, "j", 1),
        torch(21, 0, 774 * MIB, "j", 1),
    ];
    let m = machine_with([sample(T0, procs)]);
    let r1 = &m.jobs[0].ranks[1];
    assert_eq!(r1.gpu, gpu(1, 0, 0, 0).uuid);
    assert_eq!(r1.elsewhere, vec![(gpu(0, 0, 0, 0).uuid, Some(774 * MIB))]);
    assert_eq!(r1.device, Some(2698 * MIB));
}

#[test]
fn two_processes_claiming_one_rank_and_disagreeing_world_sizes_are_problems_not_joins() {
    let mut odd = torch(31, 0, GIB, "j", 1);
    let r = odd.rank.as_mut().unwrap();
    r.world_size = Some(4);
    r.problem = Some("RANK says 1, SLURM_PROCID says 2".into());
    let procs = vec![torch(30, 0, GIB, "j", 1), odd, torch(32, 0, GIB, "j", 0)];
    let m = machine_with([sample(T0, procs)]);
    let j = &m.jobs[0];
    assert_eq!(j.world_size, Some(2));
    assert_eq!(
        j.problems,
        [
            "pid 31: RANK says 1, SLURM_PROCID says 2",
            "its ranks disagree on the world size (2, 4)",
            "pid 30 and pid 31 all say rank 1",
        ]
    );
    let ranks: Vec<(u32, Option<u32>)> = j.ranks.iter().map(|r| (r.pid, r.rank)).collect();
    assert_eq!(ranks, [(32, Some(0)), (30, None), (31, None)]);
}

#[test]
fn an_exited_rank_stays_in_its_job_and_a_process_without_a_job_is_in_none() {
    let g0 = gpu(0, 80 * GIB, 0, 0);
    let alone = process(40, &g0, GIB, Framework::Pytorch, "py");
    let mut unnamed = torch(41, 0, GIB, "x", 0);
    unnamed.rank.as_mut().unwrap().job = None;
    let m = machine_with([
        sample(T0, [ddp(0), vec![alone.clone(), unnamed]].concat()),
        sample(T0 + 1000, vec![ddp(1)[1].clone(), alone]),
    ]);
    assert_eq!(m.jobs.len(), 1);
    let j = &m.jobs[0];
    assert_eq!(j.ranks[0].exited_ms, Some(T0 + 1000));
    assert_eq!(j.device, 9 * GIB, "only running ranks count");
    assert!(j.imbalance.is_none(), "one running rank");
}
