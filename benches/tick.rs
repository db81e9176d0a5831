//! Cost of one tick: `State::update` with one sample, `view::render` into a 120x40 `TestBackend`,
//! and both together, at 1x10, 8x100 and 8x500 (GPUs x processes in all), with a full ten-minute
//! history; update under PID churn (every process replaced every tick); and update after three
//! days and an hour of history at 1x10, every coarse tier full (a tick costs what it costs with
//! ten minutes: the tiers' pushes are O(1) amortised and the slow-leak rule reads a bounded
//! number of buckets).
//!
//! And the job view's cost: update then render at 8 ranks of one job on 8 GPUs, `J` off and on.
//! And the model's update alone for 8 GPUs x 8 probed ranks of one job (issue #42): the
//! screen's (`State::update`) and `serve`'s (`pipeline::apply`, no screen).
//!
//! `cargo bench --bench tick -- --warm-up-time 1 --measurement-time 3`

mod common;

use std::hint::black_box;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use gpumon::input::Action;
use gpumon::model::Event;
use gpumon::screen::Msg;
use gpumon::view;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use common::{
    SIZES, config, probed_ranks_sample, ranks_sample, sample, warm_ranks_state, warm_state,
};

/// Ticks of history before measuring: a full window.
const WARM: u64 = 600;

/// `State::update` with one new sample a tick, after `warm` ticks, for each of `sizes`; with
/// `churn`, every process is replaced each tick.
fn updates(c: &mut Criterion, name: &str, sizes: &[(u32, u32)], warm: u64, churn: bool) {
    let mut group = c.benchmark_group(name);
    for &(gpus, procs) in sizes {
        let mut state = warm_state(gpus, procs, warm, churn);
        let mut k = warm;
        group.bench_function(
            BenchmarkId::from_parameter(format!("{gpus}x{procs}")),
            |b| {
                b.iter_batched(
                    || {
                        k += 1;
                        sample(gpus, procs, k, churn)
                    },
                    |s| state.update(Msg::from(Event::Sample(s))),
                    BatchSize::SmallInput,
                );
            },
        );
    }
    group.finish();
}

fn update(c: &mut Criterion) {
    updates(c, "update", &SIZES, WARM, false);
}

fn after_days(c: &mut Criterion) {
    // Every coarse tier full: three days and an hour of samples.
    updates(c, "update_after_days", &SIZES[..1], 73 * 3600, false);
}

fn churn(c: &mut Criterion) {
    // Exited processes stay for the grace period: warm up past it.
    updates(c, "update_churn", &SIZES, 120, true);
}

fn render(c: &mut Criterion) {
    let mut group = c.benchmark_group("render");
    for (gpus, procs) in SIZES {
        let state = warm_state(gpus, procs, WARM, false);
        let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
        group.bench_function(
            BenchmarkId::from_parameter(format!("{gpus}x{procs}")),
            |b| {
                b.iter(|| {
                    terminal
                        .draw(|f| view::render(f, black_box(&state)))
                        .unwrap();
                });
            },
        );
    }
    group.finish();
}

/// Update then render, as the app loop does for each sample (building the sample is excluded).
fn tick(c: &mut Criterion) {
    let mut group = c.benchmark_group("tick");
    for (gpus, procs) in SIZES {
        let mut state = warm_state(gpus, procs, WARM, false);
        let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
        let mut k = WARM;
        group.bench_function(
            BenchmarkId::from_parameter(format!("{gpus}x{procs}")),
            |b| {
                b.iter_batched(
                    || {
                        k += 1;
                        sample(gpus, procs, k, false)
                    },
                    |s| {
                        state.update(Msg::from(Event::Sample(s)));
                        terminal.draw(|f| view::render(f, &state)).unwrap();
                    },
                    BatchSize::SmallInput,
                );
            },
        );
    }
    group.finish();
}

/// Update then render with 8 ranks of one job, the job view (`J`) off and on: what grouping the
/// table by job and drawing the job's line and the rank's detail pane cost a tick.
fn jobs(c: &mut Criterion) {
    let mut group = c.benchmark_group("tick_8_ranks");
    for by_job in [false, true] {
        let mut state = warm_ranks_state(WARM);
        if by_job {
            state.update(Msg::Action(Action::ToggleJobs));
        }
        assert_eq!(state.screen.job_lines.len(), usize::from(by_job));
        let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
        let mut k = WARM;
        let name = if by_job { "job view" } else { "flat" };
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter_batched(
                || {
                    k += 1;
                    ranks_sample(k)
                },
                |s| {
                    state.update(Msg::from(Event::Sample(s)));
                    terminal.draw(|f| view::render(f, &state)).unwrap();
                },
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

/// The model's update alone with 8 probed ranks of one job on 8 GPUs, after a full window: the
/// screen's update (model, analysis, rows) and `serve`'s (`pipeline::apply`: model and analysis).
fn probed_ranks(c: &mut Criterion) {
    let mut group = c.benchmark_group("update_8x8_probed_ranks");
    let mut state = gpumon::screen::State::new(config());
    let mut machine = gpumon::model::Machine::new(config());
    state.update(Msg::from(Event::Started(
        gpumon::source::scripted::build::machine(),
    )));
    gpumon::pipeline::apply(
        &mut machine,
        Event::Started(gpumon::source::scripted::build::machine()),
    );
    for k in 0..WARM {
        state.update(Msg::from(Event::Sample(probed_ranks_sample(k))));
        gpumon::pipeline::apply(&mut machine, Event::Sample(probed_ranks_sample(k)));
    }
    let mut k = WARM;
    group.bench_function(BenchmarkId::from_parameter("screen"), |b| {
        b.iter_batched(
            || {
                k += 1;
                probed_ranks_sample(k)
            },
            |s| state.update(Msg::from(Event::Sample(s))),
            BatchSize::SmallInput,
        );
    });
    let mut k = WARM;
    group.bench_function(BenchmarkId::from_parameter("serve"), |b| {
        b.iter_batched(
            || {
                k += 1;
                probed_ranks_sample(k)
            },
            |s| gpumon::pipeline::apply(&mut machine, Event::Sample(s)),
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

criterion_group!(
    benches,
    update,
    after_days,
    churn,
    render,
    tick,
    jobs,
    probed_ranks
);
criterion_main!(benches);
