//! Remote hosts on the screen: each `gpumon serve` polled for its `/snapshot` by a task of the
//! one runtime (`poll`: at most `CONCURRENCY` blocking exchanges at once, none on the reactor),
//! or a Prometheus server queried for the whole fleet; every reading or fault sent as
//! `Msg::Remote`. A host that fails is retried with backoff and never holds up the others or the
//! screen.

pub mod client;
pub mod hosts;
mod poll;
pub mod prometheus;

use std::collections::BTreeMap;
use std::time::Duration;

pub use client::{Client, FetchError};
pub use hosts::{Host, HostsError};
pub use poll::{CONCURRENCY, Opened, Schedule};

use crate::model::{Config, Event, Machine};
use crate::sample::MachineInfo;
use crate::screen::Remote;

/// Longest wait between retries of a failing host.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The wait before the next poll after `failures` failures in a row: the interval, doubled
/// for each failure, at most `MAX_BACKOFF` (and never shorter than the interval).
pub fn backoff(interval: Duration, failures: u32) -> Duration {
    let doubled = interval.saturating_mul(1 << failures.min(16));
    doubled.min(MAX_BACKOFF).max(interval)
}

/// One poll of a host: its machine, or why it could not be had. `full`: with every process's
/// history (the host is open on the screen); otherwise the compact snapshot.
pub fn poll(client: &Client, url: &str, config: &Config, full: bool, now_ms: u64) -> Remote {
    match client.snapshot_with(url, full) {
        Ok(s) => Remote::Machine(Box::new(s.to_machine(config))),
        Err(e) => Remote::Failed {
            at_ms: now_ms,
            reason: e.to_string(),
        },
    }
}

impl Schedule {
    /// Queries Prometheus every interval and sends its hosts as the machines from `n` on; the
    /// host the screen has open gets a second query for its processes.
    pub fn spawn_prometheus(&self, n: usize, url: String) {
        let client = self.client.clone();
        let mut fleet = PrometheusFleet::new(self.config.clone());
        // Machines this source fills (a placeholder before the first answer).
        let mut shown = 1;
        self.repeat(n..usize::MAX, move |opened| {
            let now = crate::clock::unix_ms();
            let api = format!("{url}/api/v1/query");
            let open = opened.and_then(|k| fleet.selector(k.checked_sub(n)?));
            let report = client
                .get(&api, &[("query", prometheus::QUERY)])
                .and_then(|all| {
                    let processes = match open {
                        Some(selector) => {
                            let query = prometheus::processes_query(&selector);
                            Some(client.get(&api, &[("query", &query)])?)
                        }
                        None => None,
                    };
                    let answers: Vec<&[u8]> = std::iter::once(all.as_slice())
                        .chain(processes.as_deref())
                        .collect();
                    prometheus::parse_all(&answers).map_err(FetchError::BadAnswer)
                });
            match report {
                Ok(hosts) if !hosts.is_empty() => {
                    let machines = fleet.update(hosts);
                    shown = machines.len();
                    vec![(n, Remote::Hosts(machines))]
                }
                Ok(_) => failed(n..n + shown, now, "bad answer: no GPU series in Prometheus"),
                Err(e) => failed(n..n + shown, now, &e.to_string()),
            }
        });
    }
}

fn failed(hosts: std::ops::Range<usize>, at_ms: u64, reason: &str) -> Vec<(usize, Remote)> {
    hosts
        .map(|n| {
            let reason = reason.to_string();
            (n, Remote::Failed { at_ms, reason })
        })
        .collect()
}

/// The hosts Prometheus has shown so far, each a machine fed one sample per query (so their
/// histories grow as a local machine's do).
struct PrometheusFleet {
    config: Config,
    machines: BTreeMap<String, Machine>,
    /// Each host's label matchers, for the query of its processes.
    selectors: BTreeMap<String, String>,
}

impl PrometheusFleet {
    fn new(config: Config) -> Self {
        PrometheusFleet {
            config,
            machines: BTreeMap::new(),
            selectors: BTreeMap::new(),
        }
    }

    /// The selector of the `i`th host sent (they are sent in name order).
    fn selector(&self, i: usize) -> Option<String> {
        let name = self.machines.keys().nth(i)?;
        self.selectors.get(name).cloned()
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
            self.selectors.insert(name.clone(), reading.selector);
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
