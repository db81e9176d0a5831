//! Screen tests: states built only through `State::update`, rendered into a `TestBackend` at
//! 80x24 and 120x40, and compared with reviewed insta snapshots; plus buffer checks of colour.

use std::collections::BTreeMap;

use gpumon::input::Action;
use gpumon::model::{Config, Event};
use gpumon::oom::failure::Failure;
use gpumon::screen::{Msg, State};
use gpumon::source::scripted::build::{GIB, MIB, gpu, machine, process};
use gpumon::source::{
    Framework, GpuProcess, GpuSample, GpuStatus, Memory, ProcessKind, ProcessSample, ProcessUtil,
    Reading, Sample, live,
};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;

/// 2025-11-22 12:01:40 UTC.
const T0: u64 = 1_763_812_900_000;
/// Samples fed to each state: a minute of history at one per second.
const TICKS: u64 = 40;

fn config() -> Config {
    Config {
        color: true,
        ..Config::new(1000, 60_000)
    }
}

fn with(p: ProcessSample, user: &str) -> ProcessSample {
    ProcessSample {
        user: Reading::Value(user.into()),
        ..p
    }
}

/// Tick `k` of the main scenario: two H200s, five processes of mixed frameworks, one of them
/// growing, and two allocation failures read from logs.
fn main_sample(k: u64) -> Sample {
    let total = 143_771 * MIB;
    let g0 = gpu(0, total, 0, 0);
    let g1 = gpu(1, total, 0, 0);
    let mut finetune = with(
        process(
            4400,
            &g1,
            5 * GIB + k * 100 * MIB,
            Framework::Pytorch,
            "python finetune.py --lr 3e-4",
        ),
        "bo",
    );
    finetune.settings = Reading::Value(BTreeMap::from([(
        "PYTORCH_CUDA_ALLOC_CONF".to_string(),
        "expandable_segments:True".to_string(),
    )]));
    let mut processes = vec![
        process(
            4312,
            &g0,
            105 * GIB + 400 * MIB,
            Framework::Jax,
            "python train.py",
        ),
        finetune,
        with(
            process(
                4521,
                &g1,
                3 * GIB,
                Framework::Tensorflow,
                "python serve.py --port 8500",
            ),
            "carla",
        ),
        process(
            4610,
            &g0,
            1536 * MIB,
            Framework::Cupy,
            "python fft_bench.py",
        ),
        with(
            process(
                5002,
                &g1,
                512 * MIB,
                Framework::Other,
                "./nbody -benchmark -numbodies=65536",
            ),
            "dmitri",
        ),
    ];
    processes[0].util = Reading::Value(ProcessUtil {
        sm: 97,
        memory: 41,
        encoder: 0,
        decoder: 0,
    });
    processes[1].util = Reading::Value(ProcessUtil {
        sm: 55,
        memory: 23,
        encoder: 0,
        decoder: 12,
    });
    let used = |g: &GpuSample| -> u64 {
        processes
            .iter()
            .filter(|p| p.gpu_uuid == g.uuid)
            .filter_map(|p| p.device_memory.get())
            .sum::<u64>()
            + 1229 * MIB
    };
    let (u0, u1) = (used(&g0), used(&g1));
    let mut failures = Vec::new();
    if k == 30 {
        failures.push(failure(T0 + k * 1000, "/var/log/finetune.log", 1042, Some(4400), "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 1 has a total capacity of 139.81 GiB of which 812.00 MiB is free. Including non-PyTorch memory, this process has 7.50 GiB memory in use. Of the allocated memory 3.90 GiB is allocated by PyTorch, and 3.06 GiB is reserved by PyTorch but unallocated."));
    }
    if k == 35 {
        failures.push(failure(T0 + k * 1000, "/var/log/serve.log", 77, Some(4521), "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[8192,8192] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc"));
    }
    Sample {
        at_ms: T0 + k * 1000,
        gpus: vec![gpu(0, total, u0, 615 * MIB), gpu(1, total, u1, 615 * MIB)],
        processes,
        failures,
        ..Default::default()
    }
}

fn started(config: Config) -> State {
    let mut s = State::new(config);
    s.update(Msg::from(Event::Started(machine())));
    s
}

fn main_state(config: Config) -> State {
    let mut s = started(config);
    for k in 0..TICKS {
        s.update(Msg::from(Event::Sample(main_sample(k))));
    }
    s
}

fn act(s: &mut State, actions: &[Action]) {
    for a in actions {
        s.update(Msg::Action(*a));
    }
}

fn type_text(s: &mut State, text: &str) {
    for c in text.chars() {
        s.update(Msg::Action(Action::PromptChar(c)));
    }
}

fn draw(state: &State, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| gpumon::view::render(f, state)).unwrap();
    terminal
}

/// Snapshots `state` at 80x24 and 120x40.
#[track_caller]
fn check(name: &str, state: &State) {
    for (w, h) in [(80, 24), (120, 40)] {
        let terminal = draw(state, w, h);
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), terminal.backend());
    }
}

/// Snapshots `state` at 80x24, 120x40 and 200x50 (where the chart has room).
#[track_caller]
fn check_large(name: &str, state: &State) {
    check(name, state);
    let terminal = draw(state, 200, 50);
    insta::assert_snapshot!(format!("{name}_200x50"), terminal.backend());
}

#[test]
fn chart_emphasis_gives_the_table_rows_to_the_chart() {
    let mut s = main_state(config());
    act(&mut s, &[Action::Down, Action::ToggleChart]);
    check_large("chart_emphasis", &s);
}

#[test]
fn main_screen() {
    check_large("main", &main_state(config()));
}

/// Tick `k` of the n/a scenario: an NVML v1 driver (reserved n/a), a GPU lost at tick 20, a PID
/// from another namespace, and a process whose device memory NVML cannot give.
fn na_sample(k: u64) -> Sample {
    let total = 81_559 * MIB;
    let mut g0 = gpu(0, total, 0, 0);
    g0.name = "NVIDIA A100-SXM4-80GB".into();
    g0.temperature_c = Reading::na("NotSupported");
    let mut g1 = gpu(1, total, 0, 0);
    g1.name = g0.name.clone();
    let outside = live::join(
        GpuProcess {
            pid: 91_234,
            gpu_uuid: g0.uuid.clone(),
            kind: ProcessKind::Compute,
            device_memory: Reading::Value(20 * GIB + k * 10 * MIB),
            util: Reading::na("not supported by this GPU or driver (NVML process utilisation)"),
            gpu_instance_id: None,
            compute_instance_id: None,
        },
        None,
    );
    let mut hidden = with(
        process(6100, &g0, 0, Framework::Pytorch, "python eval.py"),
        "eve",
    );
    hidden.device_memory = Reading::na("NVML gives no per-process memory under MIG");
    let mine = process(6200, &g0, 2 * GIB, Framework::Jax, "python sweep.py");
    let used = 20 * GIB + k * 10 * MIB + 2 * GIB + 6 * GIB;
    g0.memory = Reading::Value(Memory {
        total,
        used,
        free: total - used,
        reserved: Reading::na("NVML v1 (driver before R510): used includes reserved"),
    });
    if k >= 20 {
        g1.status = GpuStatus::Lost {
            reason: "GPU has fallen off the bus".into(),
        };
        g1.memory = Reading::na("GPU is lost");
        g1.utilization = Reading::na("GPU is lost");
        g1.temperature_c = Reading::na("GPU is lost");
        g1.power_mw = Reading::na("GPU is lost");
    } else {
        g1.memory = Reading::Value(Memory {
            total,
            used: 4 * GIB,
            free: total - 4 * GIB,
            reserved: Reading::na("NVML v1 (driver before R510): used includes reserved"),
        });
    }
    Sample {
        at_ms: T0 + k * 1000,
        gpus: vec![g0, g1],
        processes: vec![outside, hidden, mine],
        ..Default::default()
    }
}

#[test]
fn unavailable_readings_say_na_and_why() {
    let mut s = started(config());
    for k in 0..TICKS {
        s.update(Msg::from(Event::Sample(na_sample(k))));
    }
    check("na", &s);
}

#[test]
fn device_memory_na_selected() {
    let mut s = started(config());
    for k in 0..TICKS {
        s.update(Msg::from(Event::Sample(na_sample(k))));
    }
    act(&mut s, &[Action::Down, Action::Down]);
    let terminal = draw(&s, 120, 40);
    insta::assert_snapshot!("na_device_selected_120x40", terminal.backend());
}

#[test]
fn filter_prompt_open() {
    let mut s = main_state(config());
    act(&mut s, &[Action::FilterPrompt]);
    type_text(&mut s, "43");
    check("filter_prompt", &s);
}

#[test]
fn filter_applied_shows_only_that_pid() {
    let mut s = main_state(config());
    act(&mut s, &[Action::FilterPrompt]);
    type_text(&mut s, "4312");
    act(&mut s, &[Action::PromptApply]);
    assert_eq!(s.screen.rows.len(), 1);
    check("filter_applied", &s);
}

#[test]
fn filter_without_match_says_how_to_clear() {
    let mut s = main_state(config());
    act(&mut s, &[Action::FilterPrompt]);
    type_text(&mut s, "123");
    act(&mut s, &[Action::PromptApply]);
    let terminal = draw(&s, 80, 24);
    insta::assert_snapshot!("filter_no_match_80x24", terminal.backend());
}

#[test]
fn help_overlay_lists_the_keymap() {
    let mut s = main_state(config());
    act(&mut s, &[Action::ToggleHelp]);
    check("help", &s);
    for (w, h) in [(120, 40), (80, 24)] {
        let text = format!("{:?}", draw(&s, w, h).backend());
        for b in gpumon::input::KEYMAP {
            assert!(text.contains(b.keys), "help at {w}x{h} lacks {}", b.keys);
            assert!(text.contains(b.help), "help at {w}x{h} cuts {:?}", b.help);
        }
    }
}

#[test]
fn too_small() {
    let terminal = draw(&main_state(config()), 40, 10);
    insta::assert_snapshot!("too_small_40x10", terminal.backend());
}

#[test]
fn ascii_without_colour() {
    let config = Config {
        ascii: true,
        color: false,
        ..config()
    };
    let s = main_state(config);
    check_large("ascii", &s);
    for (w, h) in [(80, 24), (120, 40), (200, 50)] {
        let terminal = draw(&s, w, h);
        for cell in terminal.backend().buffer().content() {
            assert!(cell.symbol().is_ascii(), "non-ASCII {:?}", cell.symbol());
        }
    }
}

#[test]
fn starting_before_nvml_is_up() {
    check("starting", &State::new(config()));
}

#[test]
fn failing_source_shows_a_banner() {
    let mut s = main_state(config());
    s.update(Msg::from(Event::SourceFailed {
        at_ms: T0 + TICKS * 1000,
        reason: "NVML: Driver/library version mismatch".into(),
    }));
    s.update(Msg::from(Event::SourceFailed {
        at_ms: T0 + (TICKS + 5) * 1000,
        reason: "NVML: Driver/library version mismatch".into(),
    }));
    check("failing", &s);
}

#[test]
fn alerts_pane_shows_the_selected_alert() {
    let mut s = main_state(config());
    // Select 4400 (its failure is marked on its sparkline), then move to the alerts.
    act(&mut s, &[Action::Down, Action::TogglePane, Action::Down]);
    check("alerts_pane", &s);
}

#[test]
fn header_shows_pause_replay_and_staleness() {
    let mut s = main_state(Config {
        replay_speed: Some(2.0),
        ..config()
    });
    act(&mut s, &[Action::TogglePause, Action::FocusGpu(1)]);
    s.update(Msg::from(Event::Clock(T0 + (TICKS + 11) * 1000)));
    s.update(Msg::Status(
        "snapshot written to /tmp/gpumon-snapshot.json".into(),
    ));
    check("paused_stale", &s);
    let paused = format!("{}", draw(&s, 120, 40).backend());
    assert!(
        paused.contains("PAUSED") && !paused.contains("stale"),
        "frozen on purpose, not stale"
    );
    act(&mut s, &[Action::TogglePause]);
    let resumed = format!("{}", draw(&s, 120, 40).backend());
    assert!(resumed.contains("stale 12s"), "{resumed}");
    act(&mut s, &[Action::TogglePause]);
    s.update(Msg::from(Event::SourceEnded));
    let terminal = draw(&s, 120, 40);
    insta::assert_snapshot!("replay_ended_120x40", terminal.backend());
}

/// Issue 40: a followed log read behind its writer is named in the header with its backlog and
/// how long its first unread byte has waited; caught up, it is not.
#[test]
fn header_names_a_log_read_behind_its_writer() {
    let mut s = main_state(config());
    let mut behind = main_sample(TICKS);
    behind.logs = vec![gpumon::sample::LogBehind {
        log: "/w/train.log".into(),
        bytes: 212 << 20,
        since_ms: Some(T0 + TICKS * 1000 - 41_000),
    }];
    s.update(Msg::from(Event::Sample(behind)));
    check("log_behind", &s);
    let text = format!("{}", draw(&s, 120, 40).backend());
    assert!(
        text.contains("log train.log 212M behind 41s, reading"),
        "{text}"
    );
    let mut two = main_sample(TICKS + 1);
    two.logs = vec![
        gpumon::sample::LogBehind {
            log: "/w/a.log".into(),
            bytes: 1 << 30,
            since_ms: None,
        },
        gpumon::sample::LogBehind {
            log: "/w/b.log".into(),
            bytes: 1 << 29,
            since_ms: None,
        },
    ];
    s.update(Msg::from(Event::Sample(two)));
    let text = format!("{}", draw(&s, 120, 40).backend());
    assert!(text.contains("2 logs 1.5G behind, reading"), "{text}");
    s.update(Msg::from(Event::Sample(main_sample(TICKS + 2))));
    let text = format!("{}", draw(&s, 120, 40).backend());
    assert!(!text.contains("behind"), "caught up: {text}");
}

#[test]
fn reserved_segment_has_its_own_colour() {
    let s = main_state(config());
    let terminal = draw(&s, 120, 40);
    let buf = terminal.backend().buffer();
    let row = 1;
    let cells: Vec<_> = (0..buf.area.width).map(|x| &buf[(x, row)]).collect();
    let reserved: Vec<_> = cells.iter().filter(|c| c.symbol() == "▒").collect();
    assert!(!reserved.is_empty(), "no reserved segment on GPU0's line");
    assert!(reserved.iter().all(|c| c.fg == Color::Magenta));
    let procs = cells.iter().find(|c| c.symbol() == "█").unwrap();
    assert_eq!(procs.fg, Color::Green);
}

#[test]
fn no_colour_means_no_colour_anywhere() {
    let mut s = main_state(Config {
        color: false,
        ..config()
    });
    s.update(Msg::from(Event::SourceFailed {
        at_ms: T0 + TICKS * 1000,
        reason: "NVML: Unknown Error".into(),
    }));
    act(
        &mut s,
        &[Action::TogglePane, Action::TogglePause, Action::ToggleHelp],
    );
    for (w, h) in [(80, 24), (120, 40)] {
        let terminal = draw(&s, w, h);
        for cell in terminal.backend().buffer().content() {
            assert_eq!((cell.fg, cell.bg), (Color::Reset, Color::Reset), "{cell:?}");
        }
    }
}

/// A failure as the log parser makes it from a real message line.
fn failure(at_ms: u64, log: &str, line: u64, pid: Option<u32>, message: &str) -> Failure {
    let mut parsed = gpumon::oom::parse_all(message.as_bytes());
    assert_eq!(parsed.len(), 1, "{message}");
    let mut f = parsed.remove(0).into_failure(at_ms, log, pid);
    f.line = line;
    f
}
