//! The allocator probe on real data: a recording made on an H100 while PyTorch, JAX and CuPy jobs
//! ran with the probe (`scripts/gpu/probe_check.sh`), replayed through the pipeline.

#[path = "common/demo.rs"]
mod demo;

use gpumon::model::{Level, Machine};
use gpumon::sample::Framework;

fn replayed() -> Machine {
    demo::replayed("tests/fixtures/recordings/h100-probe-jobs.ndjson", 500)
}

#[test]
fn the_fragmenting_torch_job_is_warned_about_with_its_own_figures() {
    let m = replayed();
    let risk = m
        .alerts
        .iter()
        .find(|a| a.class == "fragmentation-risk")
        .expect("a fragmentation-risk alert");
    assert_eq!(risk.pid, Some(456));
    assert_eq!(risk.level, Level::Suspected);
    assert!(
        risk.title
            .contains("free in the pool, but its largest free block is 14.00 MiB"),
        "{}",
        risk.title
    );
    // Its last figures are PyTorch's own (the job printed the same memory_stats()).
    let torch = m.processes.values().find(|t| t.sample.pid == 456).unwrap();
    let pool = torch.sample.pool.value().expect("probed");
    assert_eq!(pool.framework, Framework::Pytorch);
    assert_eq!(pool.allocated, Some(1_692_401_664));
    assert_eq!(pool.reserved, Some(3_753_902_080));
    assert_eq!(pool.stranded, Some(2_061_500_416));
    assert_eq!(pool.limit, Some(4_294_967_294));
}

#[test]
fn jax_and_cupy_pools_come_through_and_the_cupy_limit_is_named() {
    let m = replayed();
    let pool_of = |pid| {
        m.processes
            .values()
            .find(|t| t.sample.pid == pid)
            .and_then(|t| t.sample.pool.value().cloned())
            .unwrap()
    };
    let jax = pool_of(487);
    assert_eq!(jax.framework, Framework::Jax);
    assert_eq!(jax.allocated, Some(393_739_776));
    assert_eq!(jax.largest_free_block, Some(283_639_808));
    let cupy = pool_of(578);
    assert_eq!(cupy.framework, Framework::Cupy);
    assert_eq!(cupy.limit, Some(3_221_225_472));
    assert!(
        m.alerts
            .iter()
            .any(|a| a.pid == Some(578) && a.class == "pool-limit" && a.level == Level::Failure),
        "{:?}",
        m.alerts
    );
}
