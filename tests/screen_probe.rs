//! Screen tests of the allocator probe: a probed PyTorch job whose cache fragments (pool bar,
//! ALLOC/POOL column, the fragmentation-risk alert) beside an unprobed JAX process, at 80x24
//! and 120x40, in Unicode and ASCII.

use gpumon::model::{Config, Event};
use gpumon::sample::{Framework, Pool, ProcessSample, Reading, Sample};
use gpumon::screen::{Msg, State};
use gpumon::source::scripted::build::{GIB, MIB, gpu, machine, process};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const T0: u64 = 1_763_812_900_000;

/// Second `k` of a pool that fragments as it grows: what stays allocated is flat (a job whose
/// climbing allocated memory would be a leak first), the split blocks strand 300 MiB a second.
fn torch_pool(k: u64) -> Pool {
    let stranded = 200 * MIB + k * 300 * MIB;
    let reserved = 4 * GIB + k * 300 * MIB;
    Pool {
        framework: Framework::Pytorch,
        version: Some("2.11.0".into()),
        at_ms: T0 + k * 1000,
        allocated: Some(reserved - stranded),
        reserved: Some(reserved),
        cached_free: Some(stranded),
        stranded: Some(stranded),
        largest_free_block: Some(6 * MIB),
        largest_alloc: None,
        limit: None,
        peak_allocated: Some(reserved - stranded),
        peak_reserved: Some(reserved),
        alloc_retries: Some(0),
        ooms: Some(0),
    }
}

fn state(config: Config) -> State {
    let mut s = State::new(config);
    s.update(Event::Started(machine()).into());
    let g = gpu(0, 80 * GIB, 0, 480 * MIB);
    for k in 0..12 {
        let pool = torch_pool(k);
        let device = pool.reserved.unwrap() + 530 * MIB;
        let torch = ProcessSample {
            pool: Reading::Value(pool),
            ..process(873, &g, device, Framework::Pytorch, "python train_frag.py")
        };
        let jax = process(677, &g, 60 * GIB, Framework::Jax, "python serve.py");
        let mut g = g.clone();
        if let Some(m) = match &mut g.memory {
            Reading::Value(m) => Some(m),
            Reading::Unavailable(_) => None,
        } {
            m.used = device + 60 * GIB;
            m.free = m.total - m.used - 480 * MIB;
        }
        s.update(Msg::from(Event::Sample(Sample {
            at_ms: T0 + k * 1000,
            gpus: vec![g],
            processes: vec![torch, jax],
            ..Default::default()
        })));
    }
    s
}

#[track_caller]
fn check(name: &str, state: &State) {
    for (w, h) in [(80, 24), (120, 40)] {
        let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
        terminal.draw(|f| gpumon::view::render(f, state)).unwrap();
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), terminal.backend());
    }
}

#[test]
fn a_probed_job_shows_its_pool_and_the_risk_before_the_oom() {
    let mut s = state(Config::new(1000, 60_000));
    assert!(
        s.machine()
            .alerts
            .iter()
            .any(|a| a.class == "fragmentation-risk" && a.pid == Some(873)),
        "{:?}",
        s.machine().alerts
    );
    // Select the probed job (the table is sorted by device memory: JAX first).
    s.update(Msg::Action(gpumon::input::Action::Down));
    assert_eq!(s.selected_process().map(|t| t.sample.pid), Some(873));
    check("probe_pool", &s);
}

#[test]
fn the_pool_bar_in_ascii() {
    let mut s = state(Config {
        ascii: true,
        ..Config::new(1000, 60_000)
    });
    s.update(Msg::Action(gpumon::input::Action::Down));
    check("probe_pool_ascii", &s);
}
