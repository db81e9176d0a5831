//! Memory stays bounded over a long run with PID churn: 24 hours of one-second samples in which
//! 100,000 distinct processes come and go (each lives a few seconds, grows in large steps on a
//! nearly full GPU, so alerts are raised for every one of them).
//!
//! The budget (see `gpumon::model::history`): a ring holds at most `Config::ring_capacity()`
//! points (`history / interval + 1`, 601 with the defaults) of 24 bytes, and never allocates room
//! for more; one ring per GPU and one per tracked process. Tracked processes are the ones listed
//! in the latest sample plus those that exited less than `Config::keep_exited_ms` ago (a minute
//! here, to keep the day's run short; the bound scales with it); alerts are capped at `MAX_ALERTS`.

use gpumon::model::{Config, Event, MAX_ALERTS};
use gpumon::screen::{Msg, State};
use gpumon::source::scripted::build::{GIB, MIB, gpu, machine, process};
use gpumon::source::{Framework, Sample};

const T0: u64 = 1_763_812_900_000;
const TICKS: u64 = 24 * 3600;
const PIDS: u64 = 100_000;
/// Seconds each churning process lives.
const LIFE: u64 = 7;

/// The churning processes that start at tick `k`: PIDs spread evenly over the day.
fn born(k: u64) -> std::ops::Range<u64> {
    k * PIDS / TICKS..(k + 1) * PIDS / TICKS
}

#[test]
fn a_day_of_pid_churn_stays_within_the_ring_budget() {
    let config = Config {
        keep_exited_ms: 60_000,
        ..Config::new(1000, 600_000)
    };
    let keep_s = config.keep_exited_ms / 1000;
    let cap = config.ring_capacity();
    assert_eq!(cap, 601);
    let mut state = State::new(config);
    state.update(Msg::from(Event::Started(machine())));
    let total = 80 * GIB;
    let mut distinct = 0;
    let mut most_alive = 0;
    for k in 0..TICKS {
        let g = gpu(0, total, total - GIB, GIB / 2);
        // One process lives all day; the others churn.
        let mut processes = vec![process(
            1,
            &g,
            GIB + k % 10 * MIB,
            Framework::Pytorch,
            "python serve.py",
        )];
        let first = born(k.saturating_sub(LIFE - 1)).start;
        for n in first..born(k).end {
            let age = k - (n * TICKS / PIDS).min(k);
            let pid = u32::try_from(1000 + n).unwrap();
            processes.push(process(
                pid,
                &g,
                GIB + age * GIB,
                Framework::Pytorch,
                "python job.py",
            ));
        }
        distinct += born(k).count();
        most_alive = most_alive.max(processes.len());
        state.update(Msg::from(Event::Sample(Sample {
            at_ms: T0 + k * 1000,
            gpus: vec![g],
            processes,
            ..Default::default()
        })));

        // Listed now, or exited within the grace period (a sample a second).
        let bound = most_alive + (keep_s + 1) as usize * born(k).count().max(2);
        assert!(
            state.machine().processes.len() <= bound,
            "tick {k}: {} tracked, budget {bound}",
            state.machine().processes.len()
        );
        assert!(state.screen.rows.len() <= state.machine().processes.len());
        assert!(state.machine().alerts.len() <= MAX_ALERTS);
        if k % 600 == 0 || k == TICKS - 1 {
            for t in state.machine().processes.values() {
                assert!(t.history.len() <= cap && t.history.allocated() <= cap);
            }
            for g in state.machine().gpus.values() {
                assert!(g.used.len() <= cap && g.used.allocated() <= cap);
            }
        }
    }
    assert_eq!(distinct, PIDS as usize);
    // The all-day process and the GPU hold full windows, and no more.
    let server = state
        .machine()
        .processes
        .values()
        .find(|t| t.sample.pid == 1)
        .unwrap();
    assert_eq!(
        (server.history.len(), server.history.allocated()),
        (cap, cap)
    );
    let g = state.machine().gpus.values().next().unwrap();
    assert_eq!((g.used.len(), g.used.allocated()), (cap, cap));
    // Alerts were raised for the churning processes, and the oldest dropped.
    assert_eq!(state.machine().alerts.len(), MAX_ALERTS);
    assert!(state.machine().alerts_dropped > 0);
}
