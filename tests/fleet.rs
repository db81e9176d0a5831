//! Many hosts on one screen: a remote host's snapshot back into a machine (round trip through
//! the pipeline, `Snapshot::of_machine` and `to_machine`), the fleet overview with one host
//! unreachable (insta, 80x24 and 120x40), and its keys.

use gpumon::input::Action;
use gpumon::model::{Config, Event, Machine};
use gpumon::pipeline;
use gpumon::screen::{HostState, Msg, Remote, State};
use gpumon::snapshot::Snapshot;
use gpumon::source::replay::ReplaySource;
use gpumon::source::scripted::ScriptedSource;
use gpumon::source::scripted::build::{GIB, gpu, machine, process};
use gpumon::source::{Framework, MachineInfo, Sample, Source};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const T0: u64 = 1_763_812_900_000;

fn config() -> Config {
    Config::new(1000, 60_000)
}

/// A machine's data as the pipeline builds it from a source.
fn machine_of(mut source: impl Source, config: Config) -> Machine {
    let mut m = Machine::new(config);
    pipeline::apply(&mut m, Event::Started(source.machine().unwrap()));
    while let Ok(s) = source.sample() {
        pipeline::apply(&mut m, Event::Sample(s));
    }
    m
}

/// Twenty seconds of two GPUs and a growing process on one host.
fn scripted(name: &str, gb: u64) -> Machine {
    let samples = (0..20).map(move |k| {
        let g0 = gpu(0, 80 * GIB, (gb + k) * GIB, GIB / 2);
        let g1 = gpu(1, 80 * GIB, 3 * GIB, GIB / 2);
        Ok(Sample {
            at_ms: T0 + k * 1000,
            processes: vec![
                process(
                    4312,
                    &g0,
                    (gb + k) * GIB,
                    Framework::Pytorch,
                    "python train.py",
                ),
                process(5120, &g1, 3 * GIB, Framework::Jax, "python serve.py"),
            ],
            gpus: vec![g0, g1],
            ..Default::default()
        })
    });
    let info = MachineInfo {
        host: name.into(),
        ..machine()
    };
    machine_of(ScriptedSource::new(info, samples), config())
}

fn screen(state: &State, w: u16, h: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| gpumon::view::render(f, state)).unwrap();
    terminal.backend().to_string()
}

#[test]
fn a_snapshot_becomes_the_same_machine_and_the_same_screen() {
    // A real recording: an H100, processes, exits, histories and OOM alerts.
    let path = "tests/fixtures/recordings/h100-oom-session.ndjson";
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let source = ReplaySource::read(path, file).unwrap();
    let original = machine_of(source, Config::new(1000, 3_600_000));
    assert!(!original.alerts.is_empty() && !original.processes.is_empty());
    let now = original.now_ms;
    let snapshot = Snapshot::of_machine(&original, now);
    // Through JSON, as it comes from a server.
    let wire = gpumon::snapshot::parse(std::path::Path::new("x"), &snapshot.to_json()).unwrap();
    let back = wire.to_machine(&original.config);
    assert_eq!(Snapshot::of_machine(&back, now), snapshot);

    let shown = |m: Machine| State::with_machines(original.config.clone(), vec![m]);
    for (w, h) in [(80, 24), (120, 40), (160, 50)] {
        assert_eq!(
            screen(&shown(back.clone()), w, h),
            screen(&shown(original.clone()), w, h)
        );
    }
}

/// Three hosts: this one, a remote one read from its snapshot, and one that cannot be reached.
fn fleet() -> State {
    let local = scripted("lab-01", 20);
    let remote = Snapshot::of_machine(&scripted("gpu-07", 60), T0 + 19_000);
    let mut state = State::with_hosts(
        config(),
        ["local", "gpu-07:9477", "gpu-09:9479"]
            .into_iter()
            .map(|n| (n.to_string(), Machine::new(config())))
            .collect(),
    );
    state.machines[0] = local;
    let remote = Box::new(remote.to_machine(&config()));
    state.update(Msg::Remote(1, Remote::Machine(remote)));
    for k in 0..3 {
        state.update(Msg::Remote(
            2,
            Remote::Failed {
                at_ms: T0 + 10_000 + k * 2000,
                reason: "unreachable: connection refused".into(),
            },
        ));
    }
    state
}

#[test]
fn the_overview_lists_every_host_and_why_one_cannot_be_read() {
    let state = fleet();
    assert!(state.overview());
    let rows = &state.screen.fleet.as_ref().unwrap().rows;
    assert_eq!(rows.len(), 3);
    // Sorted by worst alert: the host that cannot be read, the one with an alert, the rest.
    assert_eq!(rows.iter().map(|r| r.index).collect::<Vec<_>>(), [2, 1, 0]);
    assert_eq!((rows[1].gpus, rows[1].used), (2, Some(82 * GIB)));
    assert_eq!(
        rows[0].state,
        HostState::Failing {
            since_ms: T0 + 10_000,
            reason: "unreachable: connection refused".into()
        }
    );
    for (w, h) in [(80, 24), (120, 40), (200, 50), (250, 30)] {
        let text = screen(&state, w, h);
        assert!(text.contains("unreachable since 12:01:50: co"), "{text}");
        // The rows use the width: a host's row ends within a few columns of the border.
        let row = text.lines().find(|l| l.contains("gpu-07:9477 ")).unwrap();
        let used = row.trim_end_matches(['│', '"', ' ']).chars().count();
        assert!(used + 8 >= usize::from(w), "{used} of {w}: {row}");
        insta::assert_snapshot!(format!("fleet_overview_{w}x{h}"), text);
    }
}

#[test]
fn number_keys_pick_a_host_in_the_overview_and_a_gpu_in_a_host() {
    let mut state = fleet();
    let act = |s: &mut State, a: Action| s.update(Msg::Action(a));
    // The cursor starts on this machine, the last row (no alert); up is gpu-07.
    act(&mut state, Action::Down);
    assert_eq!((state.screen.host, state.overview()), (0, true));
    act(&mut state, Action::Up);
    assert_eq!((state.screen.host, state.overview()), (1, true));
    act(&mut state, Action::Enter);
    assert!(!state.overview());
    assert_eq!(state.machine().info.as_ref().unwrap().host, "gpu-07");
    assert_eq!(state.screen.rows.len(), 2);
    let text = screen(&state, 120, 40);
    assert!(text.contains("host 2/3 gpu-07:9477") && text.contains("python train.py"));
    assert!(screen(&fleet(), 120, 40).contains("unreachable since 12:01:50: connection refused"));
    // Focused on a host, a number is a GPU again.
    act(&mut state, Action::FocusGpu(1));
    assert_eq!(state.screen.host, 1);
    assert_eq!(state.screen.rows.len(), 1);
    act(&mut state, Action::Overview);
    assert!(state.overview());
    act(&mut state, Action::FocusGpu(2));
    assert_eq!((state.screen.host, state.overview()), (2, false));
    let text = screen(&state, 120, 40);
    assert!(text.contains("source failing since 12:01:50: unreachable: connection refused"));
    // Esc goes back once nothing else is open.
    act(&mut state, Action::Escape);
    assert!(state.overview());
}

#[test]
fn the_filter_follows_the_user_across_hosts() {
    let mut state = fleet();
    state.update(Msg::Action(Action::FilterPrompt));
    for c in "serve".chars() {
        state.update(Msg::Action(Action::PromptChar(c)));
    }
    state.update(Msg::Action(Action::PromptApply));
    let mut rows = state.screen.fleet.as_ref().unwrap().rows.clone();
    rows.sort_by_key(|r| r.index);
    assert_eq!(
        rows.iter().map(|r| r.matches).collect::<Vec<_>>(),
        vec![Some(1), Some(1), Some(0)]
    );
    state.update(Msg::Action(Action::FocusGpu(1)));
    assert_eq!(state.screen.rows.len(), 1);
    assert_eq!(state.screen.rows[0].pid, 5120);
}

#[test]
fn a_paused_screen_keeps_a_remote_host_as_it_was() {
    let mut state = fleet();
    state.update(Msg::Action(Action::TogglePause));
    let fresh = scripted("gpu-07", 10);
    state.update(Msg::Remote(1, Remote::Machine(Box::new(fresh))));
    let rows = &state.screen.fleet.as_ref().unwrap().rows;
    let gpu07 = rows.iter().find(|r| r.index == 1).unwrap();
    assert_eq!(gpu07.used, Some(82 * GIB));
}

#[test]
fn prometheus_alone_opens_the_overview_once_it_finds_hosts() {
    let mut state = State::with_hosts(
        config(),
        vec![("prometheus".into(), Machine::new(config()))],
    );
    assert!(!state.overview());
    let hosts = vec![
        ("a100-12".to_string(), scripted("a100-12", 5)),
        ("gpu-07".to_string(), scripted("gpu-07", 9)),
    ];
    state.update(Msg::Remote(0, Remote::Hosts(hosts)));
    assert!(state.overview());
    assert_eq!(
        state.screen.fleet.as_ref().unwrap().names,
        ["a100-12", "gpu-07"]
    );
    // Fewer hosts next time: the cursor stays on one that exists.
    state.update(Msg::Action(Action::Down));
    state.update(Msg::Remote(
        0,
        Remote::Hosts(vec![("a100-12".into(), scripted("a100-12", 6))]),
    ));
    assert_eq!((state.screen.host, state.machines.len()), (0, 1));
}

/// A host's screen names it once: "host 1/2 vm", not "host 1/2 vm ─ host vm"; and the overview
/// shows an information-level finding without the warning sign, after a host with a warning.
#[test]
fn the_header_names_the_host_once_and_information_wears_no_sign() {
    use gpumon::model::{Alert, Level};
    let named = |host: &str, level: Level, class: &str| {
        let mut m = scripted(host, 4);
        m.alerts.clear();
        m.add_alerts(vec![Alert {
            at_ms: T0,
            gpu_uuid: None,
            pid: Some(7),
            level,
            class: class.into(),
            confidence: None,
            title: format!("pid 7 {class}"),
            evidence: Vec::new(),
            remedy: None,
            job: None,
        }]);
        (host.to_string(), m)
    };
    let mut state = State::with_hosts(
        config(),
        vec![
            named("vm", Level::Info, "preallocation"),
            named("gpu-07", Level::Suspected, "growth-step"),
        ],
    );
    let text = screen(&state, 120, 40);
    let row = |name: &str| {
        text.lines()
            .find(|l| l.contains(&format!(" {name} ")))
            .unwrap()
            .to_string()
    };
    assert!(
        row("vm").contains("preallocation") && !row("vm").contains('⚠'),
        "{text}"
    );
    assert!(row("gpu-07").contains("⚠ growth-step"), "{text}");
    let first = text.lines().position(|l| l.contains(" gpu-07 ")).unwrap();
    assert!(
        first < text.lines().position(|l| l.contains(" vm ")).unwrap(),
        "warning first"
    );
    state.update(Msg::Action(Action::FocusGpu(0)));
    let text = screen(&state, 120, 40);
    let header = text.lines().next().unwrap();
    assert!(header.contains("host 1/2 vm"), "{header}");
    assert_eq!(header.matches("vm").count(), 1, "{header}");
    // Its GPU line counts the finding as an info, without the sign.
    let gpu0 = text.lines().find(|l| l.contains("util ")).unwrap();
    assert!(!gpu0.contains("alert") && !gpu0.contains('⚠'), "{gpu0}");
}
