//! A distributed job across hosts: rank 0 of a torchrun job on host A, rank 1 on host B. The
//! fleet overview shows them as one job (ranks per host against the world size, memory, the
//! largest rank, the root-cause rank of an alert about the job; insta at 80x24, 120x40 and
//! 200x50), whether the hosts come from snapshots, from two real `gpumon serve` polled as
//! `--remote` does, or through a real Prometheus scraping both (`GPUMON_TEST_PROMETHEUS`; skipped
//! without it, unless `CI=true`). Only 127.0.0.1; every wait is bounded.

#[path = "common/jobs.rs"]
mod jobs;
#[path = "common/prometheus.rs"]
mod prometheus;
#[path = "common/serve.rs"]
mod serve;

use std::time::{Duration, Instant};

use gpumon::model::{Alert, Config, Event, Level, Machine};
use gpumon::pipeline;
use gpumon::remote::{Client, Schedule};
use gpumon::screen::{FleetJob, Msg, Remote, State};
use gpumon::snapshot::Snapshot;
use gpumon::source::scripted::ScriptedSource;
use gpumon::source::scripted::build::{GIB, MIB, machine};
use gpumon::source::{MachineInfo, Source};
use jobs::{JOB, RANK0, RANK1, Rank};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serve::{Reply, Server, exchange};

fn config() -> Config {
    Config::new(1000, 60_000)
}

/// `host`'s machine holding `ranks`, as a remote host's snapshot gives it back.
fn host(name: &str, ranks: &[Rank], world: u32) -> Machine {
    let info = MachineInfo {
        host: name.into(),
        ..machine()
    };
    let mut source = ScriptedSource::new(info, jobs::samples(ranks, world, 15).into_iter().map(Ok));
    let mut m = Machine::new(config());
    pipeline::apply(&mut m, Event::Started(source.machine().unwrap()));
    while let Ok(s) = source.sample() {
        pipeline::apply(&mut m, Event::Sample(s));
    }
    Snapshot::of_machine(&m, m.now_ms).to_machine(&config())
}

/// The failure of rank 0 that an alert about the job names.
fn root_cause_alert() -> Alert {
    Alert {
        at_ms: jobs::T0 + 14_000,
        gpu_uuid: None,
        pid: Some(RANK0.pid),
        level: Level::Failure,
        class: "device-full".into(),
        confidence: Some("certain".into()),
        title: "rank 0 ran out of device memory; rank 1 followed".into(),
        evidence: Vec::new(),
        remedy: None,
        job: Some(JOB.into()),
    }
}

fn fleet(hosts: Vec<(&str, Machine)>) -> State {
    State::with_hosts(
        config(),
        hosts.into_iter().map(|(n, m)| (n.to_string(), m)).collect(),
    )
}

fn jobs_of(state: &State) -> Vec<FleetJob> {
    state.screen.fleet.as_ref().unwrap().jobs.clone()
}

fn screen(state: &State, w: u16, h: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| gpumon::view::render(f, state)).unwrap();
    terminal.backend().to_string()
}

/// One job of two ranks, one a host, rank 0 the larger.
fn assert_one_job_across(jobs: &[FleetJob], names: [&str; 2]) {
    assert_eq!(jobs.len(), 1, "{jobs:#?}");
    let j = &jobs[0];
    assert_eq!((j.id.as_str(), j.world_size, j.ranks), (JOB, Some(2), 2));
    let hosts: Vec<(&str, usize)> = j.hosts.iter().map(|h| (h.name.as_str(), h.ranks)).collect();
    assert_eq!(hosts, [(names[0], 1), (names[1], 1)]);
    let rank0 = 9 * GIB + 14 * 130 * MIB;
    assert_eq!(j.device, rank0 + 9 * GIB);
    let l = j.largest.as_ref().unwrap();
    assert_eq!(
        (l.host.as_str(), l.rank, l.pid, l.device),
        (names[0], Some(0), RANK0.pid, rank0)
    );
    #[allow(clippy::cast_precision_loss)]
    let ratio = rank0 as f64 / ((rank0 + 9 * GIB) / 2) as f64;
    assert!((l.ratio.unwrap() - ratio).abs() < 1e-9, "{l:?}");
    assert!(j.problems.is_empty(), "{:?}", j.problems);
}

#[test]
fn the_ranks_of_one_job_on_two_hosts_are_one_job_with_its_root_cause() {
    let mut a = host("gpu-a", &[RANK0], 2);
    let b = host("gpu-b", &[RANK1], 2);
    let state = fleet(vec![("gpu-a", a.clone()), ("gpu-b", b.clone())]);
    assert_one_job_across(&jobs_of(&state), ["gpu-a", "gpu-b"]);
    assert!(jobs_of(&state)[0].root_cause.is_none());

    a.add_alerts(vec![root_cause_alert()]);
    let state = fleet(vec![("gpu-a", a), ("gpu-b", b)]);
    let j = &jobs_of(&state)[0];
    let r = j.root_cause.as_ref().unwrap();
    assert_eq!(
        (r.host.as_str(), r.rank, r.pid, r.class.as_str()),
        ("gpu-a", Some(0), Some(RANK0.pid), "device-full")
    );
    for (w, h) in [(80, 24), (120, 40), (200, 50)] {
        let text = screen(&state, w, h);
        assert!(text.contains("1 distributed job, 1 across hosts"), "{text}");
        assert!(text.contains("2/2 ranks"), "{text}");
        insta::assert_snapshot!(format!("fleet_jobs_{w}x{h}"), text);
    }
    let wide = screen(&state, 200, 50);
    assert!(
        wide.contains("root cause rank 0 on gpu-a (pid 1446): device-full"),
        "{wide}"
    );
    assert!(
        wide.contains("largest rank 0 on gpu-a (pid 1446) 10.8G, 1.09x the median"),
        "{wide}"
    );
}

#[test]
fn a_rank_claimed_on_two_hosts_and_world_sizes_that_differ_are_problems() {
    let twin = Rank { pid: 3300, ..RANK0 };
    let state = fleet(vec![
        ("gpu-a", host("gpu-a", &[RANK0], 2)),
        ("gpu-b", host("gpu-b", &[twin], 4)),
        ("gpu-c", host("gpu-c", &[], 2)),
    ]);
    let jobs = jobs_of(&state);
    assert_eq!(jobs.len(), 1);
    let problems = &jobs[0].problems;
    assert_eq!(
        problems,
        &[
            "its hosts disagree on the world size (2, 4)".to_string(),
            "rank 0 is claimed on gpu-a (pid 1446) and gpu-b (pid 3300)".to_string(),
        ]
    );
    // A host without ranks is no host of the job.
    assert_eq!(jobs[0].hosts.len(), 2);
    assert!(screen(&state, 200, 50).contains("problem: rank 0 is claimed on gpu-a"));
}

#[test]
fn jobs_that_do_not_fit_are_counted() {
    let ranks = |n: u32| -> Vec<Rank> {
        (0..2)
            .map(|g| Rank {
                pid: 5000 + n * 10 + g,
                gpu: g,
                rank: g,
                gib: 1 + u64::from(n),
                mib_per_s: 0,
            })
            .collect()
    };
    // Twelve hosts, each a job of its own (the scripted job id is the same: rename per host).
    let hosts: Vec<(String, Machine)> = (0..12u32)
        .map(|n| {
            let mut m = host(&format!("n{n}"), &ranks(n), 2);
            for t in m.processes.values_mut() {
                if let Some(r) = &mut t.sample.rank {
                    r.job = Some(format!("slurm:{n}.0"));
                }
            }
            m.jobs = gpumon::model::jobs::derive(&m.processes);
            (format!("n{n}"), m)
        })
        .collect();
    let state = State::with_hosts(config(), hosts);
    assert_eq!(jobs_of(&state).len(), 12);
    let text = screen(&state, 80, 24);
    assert!(
        text.contains("12 distributed jobs, 0 across hosts"),
        "{text}"
    );
    assert!(text.contains("more job(s)"), "{text}");
}

/// A `gpumon serve` replaying `file` to its end (its last sample then stays served).
fn replaying(file: &std::path::Path) -> Server {
    let server = Server::start(&["--replay", file.to_str().unwrap(), "--speed", "1000"]);
    server.wait_until("ok: the recording ended");
    server
}

#[test]
fn two_servers_each_holding_a_rank_are_one_job_to_the_remote_view() {
    let dir = tempfile::tempdir().unwrap();
    let servers = [
        replaying(&jobs::recording(dir.path(), "gpu-a", &[RANK0], 2)),
        replaying(&jobs::recording(dir.path(), "gpu-b", &[RANK1], 2)),
    ];
    let names: Vec<String> = servers.iter().map(|s| s.addr.to_string()).collect();
    let mut state = State::with_hosts(
        config(),
        names
            .iter()
            .map(|n| (n.clone(), Machine::new(config())))
            .collect(),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Polls every 200 ms (as `--remote` does) until both hosts have their job (at most 30 s).
    runtime.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Msg>(16);
        let (_open_tx, open) = tokio::sync::watch::channel(None);
        let schedule = Schedule::new(
            Client::new(None),
            config(),
            Duration::from_millis(200),
            open,
            tx,
        );
        for (n, s) in servers.iter().enumerate() {
            schedule.spawn_host(n, format!("http://{}", s.addr));
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline && !state.machines.iter().all(|m| !m.jobs.is_empty()) {
            if let Ok(Some(msg)) = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
                state.update(msg);
            }
        }
    });
    assert_one_job_across(&jobs_of(&state), [&names[0], &names[1]]);
    let text = screen(&state, 120, 40);
    assert!(text.contains("2/2 ranks"), "{text}");
}

#[test]
fn two_servers_each_holding_a_rank_are_one_job_through_a_real_prometheus() {
    let Some(prometheus) = prometheus::binary() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let servers = [
        replaying(&jobs::recording(dir.path(), "gpu-a", &[RANK0], 2)),
        replaying(&jobs::recording(dir.path(), "gpu-b", &[RANK1], 2)),
    ];
    let targets: Vec<String> = servers.iter().map(|s| format!("'{}'", s.addr)).collect();
    let config_yml = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: gpumon\n    static_configs:\n      - targets: [{}]\n",
        targets.join(", ")
    );
    let (_prometheus, api) = prometheus::start(&prometheus, dir.path(), &config_yml);
    // Prometheus has both ranks (at most 60 s): the job label of the series is `job_id`, the
    // scrape job's own `job` label stays "gpumon".
    let query =
        r#"count(gpumon_process_device_memory_bytes{job="gpumon",job_id="torchrun:ddp-7f3a"})"#;
    let both = (0..600).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        prometheus::query(api, query)
            .first()
            .is_some_and(|(_, v)| *v == 2.0)
    });
    let log = || std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default();
    assert!(both, "Prometheus has both ranks; its log:\n{}", log());
    let world = prometheus::query(api, r#"gpumon_job_world_size{job_id="torchrun:ddp-7f3a"}"#);
    assert_eq!(world.len(), 2, "{world:?}");
    assert!(
        world.iter().all(|(l, v)| *v == 2.0 && l["job"] == "gpumon"),
        "{world:?}"
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut state = State::with_hosts(
        config(),
        vec![("prometheus".into(), Machine::new(config()))],
    );
    runtime.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Msg>(16);
        let (_open_tx, open) = tokio::sync::watch::channel(None);
        let schedule = Schedule::new(Client::new(None), config(), Duration::from_millis(200), open, tx);
        schedule.spawn_prometheus(0, format!("http://{api}"));
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let Ok(Some(msg)) = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await else {
                continue;
            };
            let two = matches!(&msg, Msg::Remote(_, Remote::Hosts(h)) if h.len() == 2 && h.iter().all(|(_, m)| !m.jobs.is_empty()));
            state.update(msg);
            if two {
                break;
            }
        }
    });
    // The hosts are named by their Hostname label, as the recordings name them.
    assert_one_job_across(&jobs_of(&state), ["gpu-a", "gpu-b"]);
    // The overview asked for the ranks' device memory and nothing else of the processes.
    assert!(
        state
            .machines
            .iter()
            .all(|m| m.processes.values().all(|t| t.sample.rank.is_some()))
    );
    // The raw exposition of a server with a job stays valid for Prometheus' own parser: both
    // targets are up.
    let raw = "GET /api/v1/query?query=up HTTP/1.0\r\n\r\n";
    let up = exchange(api, raw.as_bytes())
        .ok()
        .and_then(|b| Reply::parse(&b))
        .unwrap();
    assert_eq!(up.body.matches(r#""1"]"#).count(), 2, "{}", up.body);
}

/// The classic exposition of a server whose ranks carry job labels, with the job series, passes
/// `promtool check metrics` but for its lint of dcgm-exporter's label names (`GPUMON_TEST_PROMTOOL`;
/// skipped without it, unless `CI=true`).
#[test]
fn the_exposition_with_jobs_passes_promtool() {
    let promtool = match std::env::var_os("GPUMON_TEST_PROMTOOL") {
        Some(p) => p,
        None => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true but GPUMON_TEST_PROMTOOL is not set"
            );
            return;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let server = replaying(&jobs::recording(
        dir.path(),
        "gpu-a",
        &[
            RANK0,
            Rank {
                pid: 1447,
                gpu: 1,
                ..RANK1
            },
        ],
        2,
    ));
    let metrics = server.get("/metrics", &[("Accept", "text/plain")]);
    assert_eq!(metrics.status, 200);
    assert!(
        metrics.body.contains(
            r#"gpumon_job_grows_alone{Hostname="gpu-a",job_id="torchrun:ddp-7f3a",rank="0"} 1"#
        ),
        "{}",
        metrics.body
    );
    let mut child = std::process::Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(metrics.body.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    for line in said.lines() {
        assert!(
            line.contains("label names should be written in 'snake_case' not 'camelCase'"),
            "promtool: {said}"
        );
    }
}
