//! A frame of the steady screen as the app draws it: `State::update` with one sample, then the
//! painter (`paint::Painter`; regions stamped as in the frame before are left undrawn and not
//! compared) onto a 120x40 `TestBackend`. One GPU with one probed PyTorch job whose memory and
//! pool stay flat while the GPU's utilization and power move every tick (the busy job of the GPU
//! runs, `scripts/gpu/perf_vs_rivals.sh`), the chart's window full (`--history 10s`, the runs'
//! steady state). Beside it the same frames with nothing stamped (`view::render`), every region
//! drawn and compared.
//!
//! `cargo bench --bench screen -- --warm-up-time 1 --measurement-time 3`

mod common;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use gpumon::model::{Config, Event};
use gpumon::paint::{Painter, Stamps};
use gpumon::sample::{Pool, Reading};
use gpumon::screen::{Msg, State};
use gpumon::source::scripted::build::{GIB, MIB, gpu, machine, process};
use gpumon::source::{Framework, Sample};
use gpumon::view;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use common::T0;

/// Tick `k` of the busy job: 1386 MiB on the device, a pool of 800 MiB with 544 MiB allocated,
/// all flat; the GPU's utilization and power moving.
fn busy(k: u64) -> Sample {
    let mut g = gpu(0, 141 * GIB, 1395 * MIB, 615 * MIB);
    g.utilization = Reading::Value(99 + u32::from(k.is_multiple_of(2)));
    g.power_mw = Reading::Value(690_000 + u32::try_from(k % 11).unwrap() * 1000);
    let mut p = process(
        601,
        &g,
        1386 * MIB,
        Framework::Pytorch,
        "python3 scripts/gpu/torch_frag.py busy",
    );
    p.pool = Reading::Value(Pool {
        framework: Framework::Pytorch,
        version: Some("2.11.0".into()),
        at_ms: T0 + k * 1000 - 200,
        allocated: Some(544 * MIB),
        reserved: Some(800 * MIB),
        cached_free: Some(256 * MIB),
        stranded: Some(0),
        largest_free_block: None,
        largest_alloc: None,
        limit: None,
        peak_allocated: Some(544 * MIB),
        peak_reserved: Some(800 * MIB),
        alloc_retries: Some(0),
        ooms: Some(0),
    });
    Sample {
        at_ms: T0 + k * 1000,
        gpus: vec![g],
        processes: vec![p],
        ..Default::default()
    }
}

fn steady(c: &mut Criterion) {
    let mut group = c.benchmark_group("screen_steady");
    for stamped in [true, false] {
        let mut state = State::new(Config {
            color: true,
            ..Config::new(1000, 10_000)
        });
        state.update(Msg::from(Event::Started(machine())));
        for k in 0..60 {
            state.update(Msg::from(Event::Sample(busy(k))));
        }
        let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
        let mut painter = Painter::default();
        let mut k = 60;
        let name = if stamped { "stamped" } else { "unstamped" };
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter_batched(
                || {
                    k += 1;
                    busy(k)
                },
                |s| {
                    state.update(Msg::from(Event::Sample(s)));
                    painter
                        .draw(&mut terminal, |f, before| {
                            if stamped {
                                view::render_stamped(f, &state, before)
                            } else {
                                view::render(f, &state);
                                Stamps::default()
                            }
                        })
                        .unwrap();
                },
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, steady);
criterion_main!(benches);
