//! A distributed job across hosts through Prometheus' own tools: two `gpumon serve`, each
//! replaying a recording that holds one rank of a torchrun job (rank 0 on gpu-a, rank 1 on
//! gpu-b), scraped by a real Prometheus (`GPUMON_TEST_PROMETHEUS`) and read back by the fleet's
//! Prometheus source as one job; and the exposition of a server with jobs through `promtool check
//! metrics` (`GPUMON_TEST_PROMTOOL`). Each is skipped without its binary, unless `CI=true`. Only
//! 127.0.0.1; every wait is bounded.

#[path = "common/jobs.rs"]
mod jobs;
#[path = "common/prometheus.rs"]
mod prometheus;
#[path = "common/serve.rs"]
mod serve;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use gpumon::model::{Config, Machine};
use gpumon::remote::{Client, Schedule};
use gpumon::screen::{FleetJob, Msg, Remote, State};
use jobs::{RANK0, RANK1, Rank};
use serve::{Reply, Server, exchange};

fn config() -> Config {
    Config::new(1000, 60_000)
}

fn jobs_of(state: &State) -> Vec<FleetJob> {
    state.screen.fleet.as_ref().unwrap().jobs.clone()
}

#[test]
fn two_servers_each_holding_a_rank_are_one_job_through_a_real_prometheus() {
    let Some(prometheus) = prometheus::binary() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let servers = [
        Server::replayed(&jobs::recording(dir.path(), "gpu-a", &[RANK0], 2)),
        Server::replayed(&jobs::recording(dir.path(), "gpu-b", &[RANK1], 2)),
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
    jobs::assert_one_job_across(&jobs_of(&state), ["gpu-a", "gpu-b"]);
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
    let server = Server::replayed(&jobs::recording(
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
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
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
