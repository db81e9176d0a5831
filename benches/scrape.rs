//! Cost of one `/metrics` scrape: the latest snapshot encoded as OpenMetrics text, and that text
//! converted to the classic format, with 8 GPUs and 500 processes in all, and 500 per GPU.
//!
//! `cargo bench --bench scrape -- --warm-up-time 1 --measurement-time 3`

mod common;

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use gpumon::serve::Published;
use gpumon::serve::exposition;
use gpumon::serve::metrics::{self, Select};
use gpumon::snapshot::Snapshot;

use common::warm_state;

const SELECT: Select = Select {
    processes: true,
    cmdline: false,
};

fn scrape(c: &mut Criterion) {
    let mut group = c.benchmark_group("scrape");
    for (gpus, procs) in [(8, 500), (8, 4000)] {
        let state = warm_state(gpus, procs, 3, false);
        let snapshot = Snapshot::from_state(&state, state.machine().now_ms);
        let published = Arc::new(Published::new(
            snapshot,
            None,
            BTreeMap::new(),
            Some(Instant::now()),
        ));
        let id = format!("{gpus}x{procs}");
        group.bench_function(BenchmarkId::new("openmetrics", &id), |b| {
            b.iter(|| metrics::encode(Arc::clone(black_box(&published)), Some(0.5), SELECT));
        });
        let text = metrics::encode(Arc::clone(&published), Some(0.5), SELECT);
        group.bench_function(BenchmarkId::new("classic", &id), |b| {
            b.iter(|| exposition::to_classic(black_box(&text)));
        });
    }
    group.finish();
}

criterion_group!(benches, scrape);
criterion_main!(benches);
