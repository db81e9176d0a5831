//! The block map pane (`m`) of a probed PyTorch job: its map at an OOM, the sites and how they
//! changed since the map before, the recording state, at 80x24, 120x40 and 200x50; the pane of a
//! process without a map; a JAX map, which has no block map and no segment count; and hostile
//! file and function names, which reach the terminal escaped.

use std::io::Write;
use std::sync::{Arc, Mutex};

use gpumon::input::Action;
use gpumon::model::{Config, Event};
use gpumon::sample::pool_map::{AllocRecording, MapOom, MapReason};
use gpumon::sample::{Framework, Pool, PoolMap, ProbeNews, Reading, Sample};
use gpumon::screen::{Msg, State};
use gpumon::source::scripted::build::{GIB, MIB, gpu, machine, process};
use gpumon::source::scripted::maps::{fragmented, site};
use ratatui::Terminal;
use ratatui::backend::{CrosstermBackend, TestBackend};

const T0: u64 = 1_763_812_900_000;
const PID: u32 = 873;

fn draw(state: &State, (w, h): (u16, u16)) -> String {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| gpumon::view::render(f, state)).unwrap();
    format!("{}", terminal.backend())
}

fn pool() -> Pool {
    Pool {
        framework: Framework::Pytorch,
        version: Some("2.11.0".into()),
        at_ms: T0,
        allocated: Some(3_900 * MIB),
        reserved: Some(6_240 * MIB),
        cached_free: Some(2_340 * MIB),
        stranded: Some(2_300 * MIB),
        largest_free_block: Some(2 * MIB),
        largest_alloc: None,
        limit: None,
        peak_allocated: None,
        peak_reserved: None,
        alloc_retries: Some(3),
        ooms: Some(1),
    }
}

/// The job's map before the failure and at it: 312 segments, 2 MiB holes, one site climbing.
fn maps(gpu_uuid: &str) -> (PoolMap, PoolMap) {
    let before = fragmented(PID, gpu_uuid, T0 + 1000, 312);
    let mut oom = fragmented(PID, gpu_uuid, T0 + 9000, 312);
    oom.reason = MapReason::Oom;
    oom.oom = Some(MapOom {
        device: 0,
        request: GIB,
        device_allocated: Some(79 * GIB),
        device_free: Some(200 * MIB),
    });
    let d = &mut oom.frameworks[0].devices[0];
    let sites = d.sites.as_mut().unwrap();
    sites[0].bytes += 256 * MIB;
    sites[0].blocks += 16;
    sites.push(site("/home/ana/proj/eval.py", 30, "score", 4, 8 * MIB));
    (before, oom)
}

fn news(map: Option<PoolMap>, recording: bool) -> ProbeNews {
    ProbeNews {
        pid: PID,
        start_time: 1_763_800_000 + u64::from(PID),
        answer: None,
        recording: Some(AllocRecording {
            on: recording,
            max_entries: 100_000,
            stacks: "python".into(),
            since_ms: Some(T0 - 60_000),
            reason: None,
        }),
        map: map.map(Box::new),
        end: None,
        main_where: None,
    }
}

fn state(ascii: bool, probes: Vec<Vec<ProbeNews>>) -> State {
    let mut s = State::new(Config {
        ascii,
        ..Config::new(1000, 600_000)
    });
    s.update(Event::Started(machine()).into());
    for (k, news) in probes.into_iter().enumerate() {
        let g = gpu(0, 80 * GIB, 7 * GIB, 480 * MIB);
        let torch = gpumon::sample::ProcessSample {
            pool: Reading::Value(pool()),
            ..process(PID, &g, 6_770 * MIB, Framework::Pytorch, "python train.py")
        };
        let idle = process(901, &g, 300 * MIB, Framework::Other, "nvtop");
        s.update(Msg::from(Event::Sample(Sample {
            at_ms: T0 + k as u64 * 1000,
            gpus: vec![g],
            processes: vec![torch, idle],
            probes: news,
            ..Default::default()
        })));
    }
    for _ in 0..3 {
        if s.selected_process().map(|t| t.sample.pid) == Some(PID) {
            break;
        }
        s.update(Msg::Action(Action::Down));
    }
    assert_eq!(
        s.selected_process().map(|t| t.sample.pid),
        Some(PID),
        "{:?}",
        s.screen.rows
    );
    s.update(Msg::Action(Action::MapPane));
    s
}

fn the_oom(ascii: bool) -> State {
    let uuid = gpu(0, 1, 0, 0).uuid;
    let (before, oom) = maps(&uuid);
    state(
        ascii,
        vec![
            vec![news(Some(before), true)],
            vec![],
            vec![news(Some(oom), true)],
        ],
    )
}

#[test]
fn the_map_at_the_oom_shows_the_holes_the_request_and_who_holds_them() {
    let s = the_oom(false);
    for (w, h) in [(80, 24), (120, 40), (200, 50)] {
        insta::assert_snapshot!(format!("map_oom_{w}x{h}"), draw(&s, (w, h)));
    }
    let screen = draw(&s, (200, 50));
    for want in [
        "a 1.00 GiB request does not fit: 624.00 MiB is free in 312 holes, the largest 2.00 MiB",
        "proj/train.py:87 collate",
        "+256M",
        "new",
        "recording allocation history",
    ] {
        assert!(screen.contains(want), "{want:?} in\n{screen}");
    }
    insta::assert_snapshot!("map_oom_ascii_120x40", draw(&the_oom(true), (120, 40)));
}

#[test]
fn a_process_without_a_map_says_how_to_get_one() {
    let s = state(false, vec![vec![news(None, false)]]);
    let screen = draw(&s, (120, 40));
    assert!(
        screen.contains("no map yet: M asks its probe for one"),
        "{screen}"
    );
    assert!(screen.contains("R starts it"), "{screen}");
    insta::assert_snapshot!("map_none_80x24", draw(&s, (80, 24)));
}

#[test]
fn a_jax_map_shows_its_sites_and_no_segment_count_as_n_a() {
    // The JAX map as its probe writes it (derived from the H100's real JAX figures and profile by
    // scripts/jax_map_fixture.py): `segments_total` is null.
    let text = std::fs::read_to_string("tests/fixtures/maps/jax-live.map.json").unwrap();
    let mut map: PoolMap = serde_json::from_str(&text).unwrap();
    map.pid = PID;
    map.start_time = 1_763_800_000 + u64::from(PID);
    map.at_ms = T0;
    map.frameworks[0].devices[0].uuid = Some(gpu(0, 1, 0, 0).uuid);
    let s = state(false, vec![vec![news(Some(map), false)]]);
    let screen = draw(&s, (200, 50));
    for want in [
        "n/a segments",
        "segments n/a: JAX's allocator gives no block map",
        "gpu/capture_pool_maps.py:106 make_cache",
    ] {
        assert!(screen.contains(want), "{want:?} in\n{screen}");
    }
    assert!(!screen.contains(" 0 segments"), "{screen}");
}

/// Collects the bytes crossterm writes.
#[derive(Clone, Default)]
struct Bytes(Arc<Mutex<Vec<u8>>>);

impl Write for Bytes {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn hostile_names_reach_the_terminal_escaped() {
    let uuid = gpu(0, 1, 0, 0).uuid;
    let mut map = fragmented(PID, &uuid, T0, 8);
    let sites = map.frameworks[0].devices[0].sites.as_mut().unwrap();
    sites[0].file = "/w/\u{1b}]0;owned\u{7}\u{1b}[2J.py".into();
    sites[0].function = format!("f\nrm -rf ~\r{}", "x".repeat(5000));
    // As a recording or snapshot would carry it: through serde, as the reader does.
    let map: PoolMap = serde_json::from_str(&serde_json::to_string(&map).unwrap()).unwrap();
    let s = state(false, vec![vec![news(Some(map), false)]]);
    let screen = draw(&s, (200, 50));
    assert!(screen.contains("\\u{1b}]0;owned\\u{7}"), "{screen}");
    let bytes = Bytes::default();
    let mut terminal = Terminal::new(CrosstermBackend::new(bytes.clone())).unwrap();
    let area = ratatui::layout::Rect::new(0, 0, 200, 50);
    terminal.resize(area).unwrap();
    terminal.draw(|f| gpumon::view::render(f, &s)).unwrap();
    let out = String::from_utf8_lossy(&bytes.0.lock().unwrap()).into_owned();
    // (crossterm clears the screen with its own ESC [2J: the job's is followed by ".py".)
    for bad in ["\u{1b}]0;", "\u{7}", "\u{1b}[2J.py", "rm -rf ~\r", "\nrm"] {
        assert!(!out.contains(bad), "{bad:?} reached the terminal");
    }
}
