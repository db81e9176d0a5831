//! `gpumon diff` with the allocator probe: the same job on two snapshots, its pool compared.

use gpumon::model::{Config, Event, Machine};
use gpumon::pipeline;
use gpumon::sample::{Framework, Pool, ProcessSample, Reading, Sample};
use gpumon::snapshot::Snapshot;
use gpumon::snapshot::diff::{Topic, diff};
use gpumon::source::scripted::build::{GIB, MIB, gpu, machine, process};

const T0: u64 = 1_763_812_900_000;

fn snapshot(stranded: u64) -> Snapshot {
    let g = gpu(0, 80 * GIB, 12 * GIB, 480 * MIB);
    let pool = Pool {
        framework: Framework::Pytorch,
        version: Some("2.11.0".into()),
        at_ms: T0,
        allocated: Some(4 * GIB),
        reserved: Some(9 * GIB),
        cached_free: Some(5 * GIB),
        stranded: Some(stranded),
        largest_free_block: None,
        largest_alloc: None,
        limit: None,
        peak_allocated: None,
        peak_reserved: None,
        alloc_retries: Some(0),
        ooms: Some(0),
    };
    let p = ProcessSample {
        pool: Reading::Value(pool),
        ..process(873, &g, 10 * GIB, Framework::Pytorch, "python train.py")
    };
    let mut m = Machine::new(Config::new(1000, 60_000));
    pipeline::apply(&mut m, Event::Started(machine()));
    pipeline::apply(
        &mut m,
        Event::Sample(Sample {
            at_ms: T0,
            gpus: vec![g],
            processes: vec![p],
            ..Default::default()
        }),
    );
    Snapshot::of_machine(&m, T0)
}

#[test]
fn the_same_job_with_more_of_its_pool_stranded_is_named() {
    let d = diff(&snapshot(200 * MIB), &snapshot(5 * GIB));
    let pool: Vec<_> = d
        .differences
        .iter()
        .filter(|x| x.topic == Topic::Pool)
        .collect();
    assert_eq!(pool.len(), 1, "{:?}", d.differences);
    assert!(
        pool[0].subject.contains("stranded in split blocks (probe)"),
        "{:?}",
        pool[0]
    );
    assert_eq!(
        (pool[0].a_bytes, pool[0].b_bytes),
        (Some(200 * MIB), Some(5 * GIB))
    );
    assert!(pool[0].effect.contains("fragmentation OOM"));
    let same = diff(&snapshot(5 * GIB), &snapshot(5 * GIB));
    assert!(same.differences.iter().all(|x| x.topic != Topic::Pool));
}
