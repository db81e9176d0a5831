//! History over days: a week of samples replayed into the model stays within its bounds
//! (element counts, never timing), reaches back 6 hours at 10 s and 3 days at a minute with
//! floors, peaks and gaps kept, and warns the slow leak in it (20 MiB an hour, days from the
//! GPU's limit) while the healthy job beside it, with an evaluation every 30 minutes, is never
//! warned; and the zoomed chart at each resolution, on screen.

use gpumon::input::Action;
use gpumon::model::{Config, Event, Machine, Ring, TIERS};
use gpumon::sample::{Framework, Pool, Reading, Sample};
use gpumon::screen::{Msg, State};
use gpumon::source::scripted::build::{GIB, MIB, gpu, machine, process};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const T0: u64 = 1_763_812_800_000;
const MINUTE: u64 = 60_000;
const HOUR: u64 = 60 * MINUTE;

fn pool(allocated: u64, reserved: u64) -> Pool {
    Pool {
        framework: Framework::Pytorch,
        version: None,
        at_ms: 0,
        allocated: Some(allocated),
        reserved: Some(reserved),
        cached_free: Some(reserved - allocated),
        stranded: Some(0),
        largest_free_block: None,
        largest_alloc: None,
        limit: None,
        peak_allocated: Some(allocated + GIB),
        peak_reserved: None,
        alloc_retries: Some(0),
        ooms: Some(0),
    }
}

/// The machine at `ms` after the start: pid 100 (probed) keeps 20 MiB an hour from its fourth
/// hour on; pid 200 (unprobed) holds 12 GiB, 3 GiB more for 4 minutes every 30 minutes
/// (its evaluation, after which its pool frees it). The GPU's reading is missing for one
/// minute every day at 03:00 (a gap, never a zero).
fn sample(ms: u64) -> Sample {
    let k = ms / 10_000;
    let leak = ms.saturating_sub(3 * HOUR) * 20 * MIB / HOUR;
    let alloc = 4 * GIB + leak + (k * 7919 % 5) * 128 * MIB;
    let eval = if ms % (30 * MINUTE) < 4 * MINUTE {
        3 * GIB
    } else {
        0
    };
    let used = 8 * GIB + leak + 12 * GIB + eval;
    let mut g = gpu(0, 80 * GIB, used, GIB / 2);
    if ms % (24 * HOUR) / MINUTE == 180 {
        g.memory = Reading::na("NVML: GPU is lost");
    }
    let mut probed = process(
        100,
        &g,
        8 * GIB + leak,
        Framework::Pytorch,
        "python train.py",
    );
    probed.pool = Reading::Value(pool(alloc, (alloc + GIB).max(7 * GIB + leak)));
    let healthy = process(
        200,
        &g,
        12 * GIB + eval,
        Framework::Pytorch,
        "python eval.py",
    );
    Sample {
        at_ms: T0 + ms,
        gpus: vec![g],
        processes: vec![probed, healthy],
        ..Default::default()
    }
}

fn tier_lens(r: &Ring) -> [usize; 2] {
    [0, 1].map(|i| r.tier(i).map_or(0, gpumon::model::Tier::len))
}

#[test]
fn a_week_of_samples_stays_bounded_and_reaches_back_days() {
    // Every 10 s for a week (the bounds do not depend on the interval: the tiers' buckets do
    // not, and the fine ring holds `--history / interval + 1` points).
    let config = Config::new(10_000, 10 * MINUTE);
    let mut m = Machine::new(config.clone());
    gpumon::pipeline::apply(&mut m, Event::Started(machine()));
    let week = 7 * 24 * HOUR;
    let caps = [TIERS[0].capacity(), TIERS[1].capacity()];
    assert_eq!(caps, [2160, 4320]);
    let mut ms = 0;
    while ms <= week {
        gpumon::pipeline::apply(&mut m, Event::Sample(sample(ms)));
        if ms % (6 * HOUR) == 0 {
            let g = m.gpus.values().next().unwrap();
            for t in m.processes.values() {
                let h = t.pool_history.as_ref();
                let rings = [
                    Some(&t.history),
                    h.map(|h| &h.allocated),
                    h.map(|h| &h.peak),
                ];
                for r in rings.into_iter().flatten() {
                    assert!(r.len() <= config.ring_capacity() && r.allocated() <= 61);
                    let lens = tier_lens(r);
                    assert!(lens[0] <= caps[0] && lens[1] <= caps[1], "{lens:?}");
                    for (i, cap) in caps.iter().enumerate() {
                        assert!(r.tier(i).unwrap().allocated() <= *cap);
                    }
                }
            }
            assert!(tier_lens(&g.used)[1] <= caps[1]);
        }
        ms += 10_000;
    }
    let g = m.gpus.values().next().unwrap();
    // Full: 6 hours of 10 s buckets, 3 days of minutes, ending now.
    assert_eq!(tier_lens(&g.used), caps);
    let minutes = g.used.tier(1).unwrap();
    let first = minutes.iter().next().unwrap().at_ms;
    assert_eq!(T0 + week - first, 72 * HOUR - MINUTE);
    // The GPU's missing minute at 03:00 is a gap in the minute tier, never a zero.
    let gaps: Vec<_> = minutes.iter().filter(|b| b.max.is_none()).collect();
    assert_eq!(gaps.len(), 3, "one a day for 3 days");
    assert!(minutes.iter().all(|b| b.min.is_none_or(|v| v > 0)));
    // Floors and peaks survive: the evaluation's 3 GiB is in the peaks, not in the floors.
    let tens = g.used.tier(0).unwrap();
    let peak = tens.iter().filter_map(|b| b.max).max().unwrap();
    let floor = tens.iter().filter_map(|b| b.min).min().unwrap();
    assert!(peak - floor >= 3 * GIB);

    let leak: Vec<_> = m.alerts.iter().filter(|a| a.class == "leak").collect();
    assert_eq!(
        leak.len(),
        1,
        "{:?}",
        m.alerts.iter().map(|a| &a.title).collect::<Vec<_>>()
    );
    assert_eq!(leak[0].pid, Some(100));
    assert!(leak[0].title.contains("MiB/h"), "{}", leak[0].title);
    assert!(leak[0].title.contains("full in about") && leak[0].title.ends_with('d'));
    assert!(
        m.alerts.iter().all(|a| a.pid != Some(200)),
        "the healthy job is never warned"
    );
}

fn draw(state: &State, (w, h): (u16, u16)) -> String {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| gpumon::view::render(f, state)).unwrap();
    format!("{}", terminal.backend())
}

/// Eight hours of the machine above, a sample every 10 s, on a screen.
fn eight_hours() -> State {
    let mut state = State::new(Config::new(10_000, 10 * MINUTE));
    state.update(Msg::from(Event::Started(machine())));
    let mut ms = 0;
    while ms <= 8 * HOUR {
        state.update(Msg::from(Event::Sample(sample(ms))));
        ms += 10_000;
    }
    state
}

fn press(state: &mut State, out: bool, times: usize) {
    for _ in 0..times {
        state.update(Msg::Action(Action::Zoom(out)));
    }
}

#[test]
fn the_chart_zooms_from_a_minute_to_days_and_says_its_resolution() {
    let mut s = eight_hours();
    // The table's first row, pid 200 (unprobed), is selected: the GPU's chart.
    press(&mut s, false, 4);
    let c = s.screen.chart.as_ref().unwrap();
    assert_eq!(c.span_ms, MINUTE, "zoomed in to a minute");
    insta::assert_snapshot!("history_zoom_1m", draw(&s, (100, 32)));
    press(&mut s, true, 5);
    let c = s.screen.chart.as_ref().unwrap();
    assert_eq!(c.span_ms, 6 * HOUR);
    insta::assert_snapshot!("history_zoom_6h", draw(&s, (100, 32)));
    // The probed process's pool over 6 hours, each series from floor to peak.
    s.update(Msg::Action(Action::Down));
    assert_eq!(s.selected_process().map(|t| t.sample.pid), Some(100));
    assert!(s.screen.chart.as_ref().unwrap().pool.is_some());
    insta::assert_snapshot!("history_zoom_6h_pool", draw(&s, (100, 48)));
    s.update(Msg::Action(Action::Up));
    press(&mut s, true, 3);
    let c = s.screen.chart.as_ref().unwrap();
    assert_eq!(c.span_ms, 72 * HOUR, "the widest zoom");
    insta::assert_snapshot!("history_zoom_3d", draw(&s, (100, 32)));
    press(&mut s, true, 1);
    assert_eq!(s.screen.chart.as_ref().unwrap().span_ms, 72 * HOUR);
}
