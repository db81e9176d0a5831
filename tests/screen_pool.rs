//! The pool's story on the chart: the demo's probed PyTorch process whose cache fragments until
//! its OOM (found by that OOM) and three scripted probe sequences (fragmentation building, a leak
//! to a cap, cache growth over a flat allocated line), at 80x24, 120x40 and 200x50, in Unicode
//! and ASCII; and the scale key (`g`) between a fitted axis and the whole GPU.

use gpumon::input::Action;
use gpumon::model::{Config, Event};
use gpumon::sample::{Framework, Pool, ProcessSample, Reading, Sample};
use gpumon::screen::{Msg, Scale, State};
use gpumon::source::replay::ReplaySource;
use gpumon::source::scripted::build::{GIB, MIB, gpu, machine, process};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const T0: u64 = 1_763_812_900_000;

fn draw(state: &State, (w, h): (u16, u16)) -> String {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| gpumon::view::render(f, state)).unwrap();
    format!("{}", terminal.backend())
}

#[track_caller]
fn check(name: &str, state: &State, sizes: &[(u16, u16)]) {
    for &(w, h) in sizes {
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), draw(state, (w, h)));
    }
}

/// Filters the table to `pid` (which selects it), as `/` PID Enter does.
fn select(state: &mut State, pid: u32) {
    state.update(Msg::Action(Action::FilterPrompt));
    for c in pid.to_string().chars() {
        state.update(Msg::Action(Action::PromptChar(c)));
    }
    state.update(Msg::Action(Action::PromptApply));
    assert_eq!(state.selected_process().map(|t| t.sample.pid), Some(pid));
}

fn demo(ascii: bool) -> State {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/demo.ndjson");
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut source = ReplaySource::read(path, file).unwrap();
    let config = Config {
        ascii,
        ..Config::new(source.header().interval_ms, 120_000)
    };
    let mut state = State::new(config);
    state.update(Msg::from(Event::Started(source.header().machine.clone())));
    for s in source.samples() {
        state.update(Msg::from(Event::Sample(s.unwrap())));
    }
    state
}

/// The process the demo's first alert of `class` names.
fn pid_of(state: &State, class: &str) -> u32 {
    let alerts = &state.machine().alerts;
    let alert = alerts.iter().find(|a| a.class == class);
    alert
        .and_then(|a| a.pid)
        .unwrap_or_else(|| panic!("the demo's {class} alert"))
}

#[test]
fn the_demo_tells_the_pool_story_of_its_fragmenting_job() {
    for ascii in [false, true] {
        let mut s = demo(ascii);
        let pid = pid_of(&s, "fragmentation");
        select(&mut s, pid);
        let pool = s.screen.chart.as_ref().and_then(|c| c.pool.as_ref());
        let pool = pool.expect("the probed process gets the pool's chart");
        assert_eq!(pool.ooms.len(), 1, "its OOM is marked: {pool:?}");
        assert!(!pool.stranded_top.is_empty(), "and its stranded band");
        let name = if ascii {
            "demo_pool_ascii"
        } else {
            "demo_pool"
        };
        check(name, &s, &[(80, 24), (120, 40), (200, 50)]);
        let screen = draw(&s, (120, 40));
        for legend in ["device", "pool", "allocated"] {
            assert!(screen.contains(legend), "{legend} in the legend:\n{screen}");
        }
    }
}

/// The demo's growing PyTorch job (its leak alert names it) read 0 VMS and RSS from /proc as it
/// exited at the recording's end: no reading, so its row keeps the last figures read.
#[test]
fn the_exited_row_keeps_its_last_host_figures() {
    let mut s = demo(false);
    let pid = pid_of(&s, "leak");
    select(&mut s, pid);
    let t = s.selected_process().unwrap();
    assert!(t.exited_ms.is_some());
    assert_eq!(t.vms(), Some((29_751_255_040, true)));
    let screen = draw(&s, (120, 40));
    assert!(!screen.contains("VMS 0B"), "{screen}");
    assert!(screen.contains("~27.7G"), "the table's last VMS:\n{screen}");
    assert!(
        screen.contains("MiB, last read)"),
        "the detail pane:\n{screen}"
    );
}

/// One probed PyTorch job beside an idle 80 GiB GPU, its pool at tick `k` given by `pool`.
fn scripted(ticks: u64, ascii: bool, pool: impl Fn(u64) -> Pool) -> State {
    let mut s = State::new(Config {
        ascii,
        ..Config::new(1000, 600_000)
    });
    s.update(Event::Started(machine()).into());
    for k in 0..ticks {
        let p = pool(k);
        let device = p.reserved.unwrap() + 530 * MIB;
        let mut g = gpu(0, 80 * GIB, device, 480 * MIB);
        g.uuid = "GPU-0".into();
        let torch = ProcessSample {
            pool: Reading::Value(p),
            ..process(873, &g, device, Framework::Pytorch, "python train.py")
        };
        s.update(Msg::from(Event::Sample(Sample {
            at_ms: T0 + k * 1000,
            gpus: vec![g],
            processes: vec![torch],
            ..Default::default()
        })));
    }
    select(&mut s, 873);
    s
}

fn pool(k: u64, allocated: u64, reserved: u64, stranded: u64, limit: Option<u64>) -> Pool {
    Pool {
        framework: Framework::Pytorch,
        version: Some("2.11.0".into()),
        at_ms: T0 + k * 1000,
        allocated: Some(allocated),
        reserved: Some(reserved),
        cached_free: Some(reserved - allocated),
        stranded: Some(stranded),
        largest_free_block: Some(6 * MIB),
        largest_alloc: None,
        limit,
        peak_allocated: None,
        peak_reserved: None,
        alloc_retries: Some(0),
        ooms: Some(0),
    }
}

#[test]
fn fragmentation_building_widens_the_stranded_band() {
    for ascii in [false, true] {
        let s = scripted(40, ascii, |k| {
            // Under an 8 GiB cap, so the stranded part will matter: the pool cannot grow past it.
            let stranded = k * 100 * MIB;
            pool(
                k,
                3 * GIB,
                3 * GIB + stranded + 200 * MIB,
                stranded,
                Some(8 * GIB),
            )
        });
        let name = if ascii { "frag_ascii" } else { "frag" };
        check(name, &s, &[(80, 24), (120, 40), (200, 50)]);
        // At 80x24 the chart has rows only when `c` gives it the table's.
        let mut s = s;
        s.update(Msg::Action(Action::ToggleChart));
        check(&format!("{name}_chart"), &s, &[(80, 24)]);
        let screen = draw(&s, (80, 24));
        assert!(screen.contains("pid 873 pool on GPU0"), "{screen}");
        if ascii {
            assert!(screen.is_ascii(), "{screen}");
        }
    }
}

#[test]
fn a_leak_climbs_to_its_cap() {
    let s = scripted(50, false, |k| {
        let allocated = GIB + k * 60 * MIB;
        pool(k, allocated, allocated + 64 * MIB, 0, Some(4 * GIB))
    });
    let c = s.screen.chart.as_ref().unwrap();
    assert!(c.top >= 4 * GIB, "the cap is in range: {}", c.top);
    check("leak_to_cap", &s, &[(120, 40)]);
}

#[test]
fn cache_growth_over_a_flat_allocated_line() {
    let s = scripted(40, false, |k| {
        pool(k, 2 * GIB, 2 * GIB + k * 50 * MIB, 0, None)
    });
    check("cache_growth", &s, &[(120, 40)]);
}

#[test]
fn the_scale_key_toggles_between_the_data_and_the_whole_gpu() {
    let mut s = scripted(40, false, |k| pool(k, GIB, GIB + k * 10 * MIB, 0, None));
    let fit = s.screen.chart.clone().unwrap();
    assert_eq!(fit.scale, Scale::Fit);
    assert!(fit.top < 4 * GIB, "fitted to a 1.9 GiB job: {}", fit.top);
    assert!(
        (fit.span_s - 40.0).abs() < 1e-9,
        "40 s of history, not 10 min"
    );
    s.update(Msg::Action(Action::ToggleScale));
    let whole = s.screen.chart.clone().unwrap();
    assert_eq!((whole.scale, whole.top), (Scale::Gpu, 80 * GIB));
    check("scale_gpu", &s, &[(120, 40)]);
}
