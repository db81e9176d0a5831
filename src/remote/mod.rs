//! Remote hosts on the screen: each `gpumon serve` polled for its `/snapshot` on its own thread
//! (blocking HTTP stays off the reactor and off tokio's small blocking pool), or a Prometheus
//! server queried for the whole fleet; every reading or fault sent as `Msg::Remote`. A host that
//! fails is retried with backoff and never holds up the others or the screen.

pub mod client;
pub mod hosts;
pub mod prometheus;

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::sync::mpsc;

pub use client::{Client, FetchError};
pub use hosts::{Host, HostsError};

use crate::model::{Config, Event, Machine};
use crate::sample::MachineInfo;
use crate::screen::{Msg, Remote};

/// Longest wait between retries of a failing host.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The wait before the next poll after `failures` failures in a row: the interval, doubled
/// for each failure, at most `MAX_BACKOFF` (and never shorter than the interval).
pub fn backoff(interval: Duration, failures: u32) -> Duration {
    let doubled = interval.saturating_mul(1 << failures.min(16));
    doubled.min(MAX_BACKOFF).max(interval)
}

/// One poll of a host: its machine, or why it could not be had.
pub fn poll(client: &Client, url: &str, config: &Config, now_ms: u64) -> Remote {
    match client.snapshot(url) {
        Ok(s) => Remote::Machine(Box::new(s.to_machine(config))),
        Err(e) => Remote::Failed {
            at_ms: now_ms,
            reason: e.to_string(),
        },
    }
}

/// Polls `url` as machine `n` every `interval` until the receiver is gone.
pub fn spawn_host(
    n: usize,
    url: String,
    client: Client,
    config: Config,
    interval: Duration,
    tx: mpsc::Sender<Msg>,
) -> std::io::Result<()> {
    spawn(format!("gpumon-remote-{n}"), interval, tx, move || {
        vec![(n, poll(&client, &url, &config, crate::clock::unix_ms()))]
    })
}

/// Queries Prometheus every `interval` and sends its hosts as the machines from `n` on.
pub fn spawn_prometheus(
    n: usize,
    url: String,
    client: Client,
    config: Config,
    interval: Duration,
    tx: mpsc::Sender<Msg>,
) -> std::io::Result<()> {
    let mut fleet = PrometheusFleet::new(config);
    // Machines this source fills (a placeholder before the first answer).
    let mut shown = 1;
    spawn("gpumon-prometheus".into(), interval, tx, move || {
        let now = crate::clock::unix_ms();
        let answer = client.get(
            &format!("{url}/api/v1/query"),
            &[("query", prometheus::QUERY)],
        );
        let report =
            answer.and_then(|bytes| prometheus::parse(&bytes).map_err(FetchError::BadAnswer));
        match report {
            Ok(hosts) if !hosts.is_empty() => {
                let machines = fleet.update(hosts);
                shown = machines.len();
                vec![(n, Remote::Hosts(machines))]
            }
            Ok(_) => failed(n..n + shown, now, "bad answer: no GPU series in Prometheus"),
            Err(e) => failed(n..n + shown, now, &e.to_string()),
        }
    })
}

fn failed(hosts: std::ops::Range<usize>, at_ms: u64, reason: &str) -> Vec<(usize, Remote)> {
    hosts
        .map(|n| {
            let reason = reason.to_string();
            (n, Remote::Failed { at_ms, reason })
        })
        .collect()
}

/// A thread that runs `tick` now and then after each wait, sending what it reports, until the
/// receiver is gone. Waits grow while the reports are failures.
fn spawn(
    name: String,
    interval: Duration,
    tx: mpsc::Sender<Msg>,
    mut tick: impl FnMut() -> Vec<(usize, Remote)> + Send + 'static,
) -> std::io::Result<()> {
    std::thread::Builder::new().name(name).spawn(move || {
        let mut failures = 0u32;
        loop {
            let reports = tick();
            let ok = reports
                .iter()
                .all(|(_, r)| !matches!(r, Remote::Failed { .. }));
            for (n, report) in reports {
                if tx.blocking_send(Msg::Remote(n, report)).is_err() {
                    return;
                }
            }
            failures = if ok { 0 } else { failures.saturating_add(1) };
            std::thread::sleep(if ok {
                interval
            } else {
                backoff(interval, failures)
            });
        }
    })?;
    Ok(())
}

/// The hosts Prometheus has shown so far, each a machine fed one sample per query (so their
/// histories grow as a local machine's do).
struct PrometheusFleet {
    config: Config,
    machines: BTreeMap<String, Machine>,
}

impl PrometheusFleet {
    fn new(config: Config) -> Self {
        PrometheusFleet {
            config,
            machines: BTreeMap::new(),
        }
    }

    /// Takes one answer in; a host missing from it is shown as failing.
    fn update(
        &mut self,
        hosts: BTreeMap<String, prometheus::HostReading>,
    ) -> Vec<(String, Machine)> {
        let at = hosts.values().map(|h| h.sample.at_ms).max().unwrap_or(0);
        for (name, machine) in &mut self.machines {
            if !hosts.contains_key(name) {
                machine.update(&Event::SourceFailed {
                    at_ms: at,
                    reason: "unreachable: no series in Prometheus' latest answer".into(),
                });
            }
        }
        for (name, reading) in hosts {
            let machine = self.machines.entry(name.clone()).or_insert_with(|| {
                let mut m = Machine::new(self.config.clone());
                m.update(&Event::Started(MachineInfo {
                    host: name.clone(),
                    kernel: None,
                    driver_version: None,
                    nvml_version: None,
                    cuda_version: None,
                    no_gpu: None,
                }));
                m
            });
            machine.update(&Event::Sample(reading.sample.clone()));
            machine.ingest(reading.sample);
            machine.alerts.clear();
            machine.add_alerts(reading.alerts);
        }
        self.machines
            .iter()
            .map(|(k, m)| (k.clone(), m.clone()))
            .collect()
    }
}
