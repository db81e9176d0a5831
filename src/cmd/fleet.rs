//! The hosts besides this one (`--remote`, `--hosts`, `--prometheus`, `--no-local`): checked
//! before the screen starts, then each polled by `remote` into the screen's messages.

use std::time::Duration;

use tokio::sync::mpsc;

use super::Fail;
use crate::cli::{ClientTlsArgs, FleetArgs};
use crate::model::{Config, Machine};
use crate::remote::{self, Client, Host};
use crate::screen::{Msg, State};
use crate::tls::client::{Files, Trust};

/// What the command line asks for besides the local machine.
pub(super) struct Plan {
    pub local: bool,
    hosts: Vec<Host>,
    prometheus: Option<String>,
    client: Client,
}

/// `None` when no other host is asked for.
pub(super) fn plan(args: &FleetArgs) -> Result<Option<Plan>, Fail> {
    let mut hosts = Vec::new();
    if let Some(path) = &args.hosts {
        hosts = remote::hosts::read_hosts(path).map_err(|e| Fail::usage(e.to_string()))?;
    }
    for url in &args.remotes {
        let host = Host::from_url(url).map_err(|e| Fail::usage(format!("--remote {e}")))?;
        if hosts.iter().any(|h| h.url == host.url) {
            return Err(Fail::usage(format!("--remote {}: listed twice", host.url)));
        }
        hosts.push(host);
    }
    let prometheus = match &args.prometheus {
        Some(url) => Some(
            remote::hosts::check_url(url).map_err(|e| Fail::usage(format!("--prometheus {e}")))?,
        ),
        None => None,
    };
    if hosts.is_empty() && prometheus.is_none() {
        return if args.no_local {
            Err(Fail::usage(
                "--no-local needs --remote, --hosts or --prometheus",
            ))
        } else {
            Ok(None)
        };
    }
    let token = match &args.token_file {
        Some(path) => {
            Some(remote::hosts::read_token(path).map_err(|e| Fail::usage(e.to_string()))?)
        }
        None => None,
    };
    Ok(Some(Plan {
        local: !args.no_local,
        hosts,
        prometheus,
        client: Client::with_trust(token, &trust(&args.tls)?),
    }))
}

/// The roots and client certificate of https URLs: the system's roots and the files given.
pub(super) fn trust(args: &ClientTlsArgs) -> Result<Trust, Fail> {
    Trust::load(Files {
        ca: args.tls_ca.as_deref(),
        cert: args.tls_client_cert.as_deref(),
        key: args.tls_client_key.as_deref(),
    })
    .map_err(|e| Fail::usage(format!("TLS: {e}")))
}

impl Plan {
    /// The screen's state: this machine (unless left out), the hosts, then Prometheus' hosts.
    pub fn state(&self, config: Config) -> State {
        let mut names: Vec<String> = Vec::new();
        if self.local {
            names.push("local".into());
        }
        names.extend(self.hosts.iter().map(|h| h.name.clone()));
        if self.prometheus.is_some() {
            names.push("prometheus".into());
        }
        let machines = names
            .into_iter()
            .map(|n| (n, Machine::new(config.clone())))
            .collect();
        State::with_hosts(config, machines)
    }

    /// Starts a polling task per host and one for Prometheus, on the current runtime; the
    /// screen tells them through `opened` which host it has open.
    pub fn start(
        self,
        config: &Config,
        interval: Duration,
        opened: remote::Opened,
        tx: &mpsc::Sender<Msg>,
    ) {
        let first = usize::from(self.local);
        let prometheus_at = first + self.hosts.len();
        let schedule =
            remote::Schedule::new(self.client, config.clone(), interval, opened, tx.clone());
        for (i, host) in self.hosts.into_iter().enumerate() {
            schedule.spawn_host(first + i, host.url);
        }
        if let Some(url) = self.prometheus {
            schedule.spawn_prometheus(prometheus_at, url);
        }
    }
}
