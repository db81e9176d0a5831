//! The fleet through a real Prometheus on 127.0.0.1: two `gpumon serve --demo` that both call
//! themselves "vm" stay two hosts, told apart by `instance`; the overview's query carries no
//! process series, and opening a host asks Prometheus for its processes.
//! `GPUMON_TEST_PROMETHEUS` names the prometheus binary (`.ci/run` unpacks Debian's); without it
//! the test is skipped, unless `CI=true`.

#[path = "common/prometheus.rs"]
mod prometheus;
#[path = "common/serve.rs"]
mod serve;

use std::time::{Duration, Instant};

use gpumon::model::{Config, Machine};
use gpumon::remote::{Client, Schedule};
use gpumon::screen::{Msg, Remote};
use serve::{Reply, Server, exchange};

#[test]
fn one_hostname_two_instances_stay_two_hosts_and_an_opened_one_gets_its_processes() {
    let Some(prometheus) = prometheus::binary() else {
        return;
    };
    let servers = [Server::start(&["--demo"]), Server::start(&["--demo"])];
    let dir = tempfile::tempdir().unwrap();
    let targets: Vec<String> = servers.iter().map(|s| format!("'{}'", s.addr)).collect();
    let config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: gpumon\n    static_configs:\n      - targets: [{}]\n",
        targets.join(", ")
    );
    let (_prometheus, api) = prometheus::start(&prometheus, dir.path(), &config);
    let port = api.port();
    let names: Vec<String> = servers.iter().map(|s| format!("vm ({})", s.addr)).collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Prometheus has scraped both servers (at most 60 s) before the fleet asks it.
    // (Instances, not series: the demo's machine has two GPUs.)
    let raw = "GET /api/v1/query?query=count(count%20by%20(instance)%20(gpumon_gpu_memory_used_bytes)) HTTP/1.0\r\n\r\n";
    let both = (0..600).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        let answer = exchange(api, raw.as_bytes())
            .ok()
            .and_then(|b| Reply::parse(&b));
        answer.is_some_and(|r| r.body.contains(r#","2"]"#))
    });
    assert!(both, "Prometheus scraped both servers");
    // Polls every 200 ms until both hosts are there, then opens the second (at most 30 s).
    let (overview, opened) = runtime.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Msg>(16);
        let (open_tx, open) = tokio::sync::watch::channel(None);
        let interval = Duration::from_millis(200);
        let schedule = Schedule::new(
            Client::new(None),
            Config::new(1000, 60_000),
            interval,
            open,
            tx,
        );
        schedule.spawn_prometheus(0, format!("http://127.0.0.1:{port}"));
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut overview: Option<Vec<(String, Machine)>> = None;
        while Instant::now() < deadline {
            let Ok(Some(Msg::Remote(_, Remote::Hosts(hosts)))) =
                tokio::time::timeout(Duration::from_secs(5), rx.recv()).await
            else {
                continue;
            };
            let has_processes = |m: &Machine| !m.processes.is_empty();
            match &overview {
                None if hosts.len() == 2 => {
                    overview = Some(hosts);
                    open_tx.send_replace(Some(1));
                }
                Some(_) if has_processes(&hosts[1].1) => return (overview, Some(hosts)),
                _ => {}
            }
        }
        (overview, None)
    });
    let overview = overview.expect("both hosts within 30 s");
    let shown: Vec<&str> = overview.iter().map(|(n, _)| n.as_str()).collect();
    let mut want: Vec<&str> = names.iter().map(String::as_str).collect();
    want.sort_unstable();
    assert_eq!(shown, want);
    assert!(
        overview
            .iter()
            .all(|(_, m)| m.processes.is_empty() && !m.gpus.is_empty()),
        "the overview's query carries GPUs and no processes"
    );
    let opened = opened.expect("the opened host's processes within 30 s");
    assert!(opened[0].1.processes.is_empty(), "only the opened host");
}
