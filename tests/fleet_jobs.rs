//! A distributed job across hosts: rank 0 of a torchrun job on host A, rank 1 on host B. The
//! fleet overview shows them as one job (ranks per host against the world size, memory, the
//! largest rank, the root-cause rank of an alert about the job; insta at 80x24, 120x40 and
//! 200x50), whether the hosts come from snapshots or from two real `gpumon serve` polled as
//! `--remote` does (through a real Prometheus: `fleet_jobs_prometheus.rs`). Only 127.0.0.1;
//! every wait is bounded.

#[path = "common/jobs.rs"]
mod jobs;
#[path = "common/serve.rs"]
mod serve;

use std::time::{Duration, Instant};

use gpumon::model::{Alert, Config, Event, Level, Machine};
use gpumon::pipeline;
use gpumon::remote::{Client, Schedule};
use gpumon::screen::{FleetJob, Msg, State};
use gpumon::snapshot::Snapshot;
use gpumon::source::scripted::ScriptedSource;
use gpumon::source::scripted::build::machine;
use gpumon::source::{MachineInfo, Source};
use jobs::{JOB, RANK0, RANK1, Rank};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serve::Server;

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

#[test]
fn the_ranks_of_one_job_on_two_hosts_are_one_job_with_its_root_cause() {
    let mut a = host("gpu-a", &[RANK0], 2);
    let b = host("gpu-b", &[RANK1], 2);
    let state = fleet(vec![("gpu-a", a.clone()), ("gpu-b", b.clone())]);
    jobs::assert_one_job_across(&jobs_of(&state), ["gpu-a", "gpu-b"]);
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
        wide.contains("largest rank 0 on gpu-a (pid 1446) 10.8G, 1.20x the median"),
        "{wide}"
    );
}

#[test]
fn the_root_cause_is_the_most_severe_alert_about_the_job_then_the_earliest() {
    let (mut a, mut b) = (host("gpu-a", &[RANK0], 2), host("gpu-b", &[RANK1], 2));
    // gpu-b suspected something of the job first; gpu-a's failure is more severe.
    let suspicion = Alert {
        at_ms: jobs::T0 + 5_000,
        pid: Some(RANK1.pid),
        level: Level::Suspected,
        class: "rank-grows-alone".into(),
        ..root_cause_alert()
    };
    b.add_alerts(vec![suspicion.clone()]);
    a.add_alerts(vec![root_cause_alert()]);
    let state = fleet(vec![("gpu-a", a.clone()), ("gpu-b", b.clone())]);
    let r = jobs_of(&state)[0].root_cause.clone().unwrap();
    assert_eq!(
        (r.host.as_str(), r.rank, r.level),
        ("gpu-a", Some(0), Level::Failure)
    );
    // Two failures: the earlier is the root cause; an alert about another job, or none, is not.
    b.add_alerts(vec![Alert {
        at_ms: jobs::T0 + 9_000,
        level: Level::Failure,
        ..suspicion
    }]);
    let mut c = host("gpu-c", &[], 2);
    c.add_alerts(vec![Alert {
        at_ms: jobs::T0,
        job: Some("slurm:1.0".into()),
        ..root_cause_alert()
    }]);
    let state = fleet(vec![("gpu-a", a), ("gpu-b", b), ("gpu-c", c)]);
    let r = jobs_of(&state)[0].root_cause.clone().unwrap();
    assert_eq!(
        (r.host.as_str(), r.rank, r.pid, r.at_ms),
        ("gpu-b", Some(1), Some(RANK1.pid), jobs::T0 + 9_000)
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

#[test]
fn two_servers_each_holding_a_rank_are_one_job_to_the_remote_view() {
    let dir = tempfile::tempdir().unwrap();
    let servers = [
        Server::replayed(&jobs::recording(dir.path(), "gpu-a", &[RANK0], 2)),
        Server::replayed(&jobs::recording(dir.path(), "gpu-b", &[RANK1], 2)),
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
    jobs::assert_one_job_across(&jobs_of(&state), [&names[0], &names[1]]);
    let text = screen(&state, 120, 40);
    assert!(text.contains("2/2 ranks"), "{text}");
}
