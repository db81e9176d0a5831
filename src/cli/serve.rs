//! `gpumon serve`'s command line.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgGroup, Args};

use super::{parse_interval, parse_speed};

/// Default listen address: loopback only, port 9477.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9477";

#[derive(Debug, Clone, Args)]
#[command(
    group(ArgGroup::new("recorded").args(["demo", "replay"])),
    after_help = "Listens on 127.0.0.1 only unless --listen says otherwise. With --token-file, \
/metrics and /snapshot need `Authorization: Bearer <token>`; /healthz never does. With --tls-cert \
and --tls-key it serves https only, re-reading both files when they change (rotation needs no \
restart). --web-config reads TLS and basic-auth users from a Prometheus exporter web \
configuration file (tls_server_config, basic_auth_users with bcrypt hashes)."
)]
pub struct ServeArgs {
    /// Address and port to listen on
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// Require this bearer token (the file's contents, trimmed; it must not be world-readable)
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Serve https with this certificate chain (PEM, the server's certificate first)
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM; not readable by every user)
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Require client certificates signed by a CA in FILE (PEM; mutual TLS)
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,
    /// TLS and basic auth from a Prometheus exporter web configuration file (YAML)
    #[arg(long, value_name = "FILE", conflicts_with_all = ["tls_cert", "tls_key", "tls_client_ca"])]
    pub web_config: Option<PathBuf>,
    /// No per-process series in /metrics (GPU and machine series only)
    #[arg(long)]
    pub no_process_metrics: bool,
    /// Add the full command line as a `command` label (it may hold secrets; off by default)
    #[arg(long)]
    pub expose_cmdline: bool,
    /// Time between samples (e.g. 1s, 500ms; at least 100ms) [default: 1s; a replay keeps the
    /// interval it was recorded at: --speed plays it faster or slower]
    #[arg(long, value_parser = parse_interval, allow_hyphen_values = true)]
    pub interval: Option<Duration>,
    /// Serve the real recording built into gpumon (no GPU needed; it loops)
    #[arg(long)]
    pub demo: bool,
    /// Serve a recording instead of reading the GPUs (its last sample stays served at its end)
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// Replay speed (with --replay or --demo)
    #[arg(long, requires = "recorded", value_parser = parse_speed, allow_hyphen_values = true)]
    pub speed: Option<f64>,
    /// Report this host name (the `Hostname` label, the snapshot's host) instead of the
    /// machine's own; a Kubernetes DaemonSet sets NODE_NAME from `spec.nodeName`
    #[arg(long, value_name = "NAME", env = "NODE_NAME", value_parser = parse_hostname)]
    pub hostname: Option<String>,
    /// Follow this log for allocation failures (repeatable)
    #[arg(long = "log", value_name = "FILE")]
    pub logs: Vec<PathBuf>,
}

impl ServeArgs {
    /// The time between samples: `--interval`, or 1 s.
    pub fn every(&self) -> Duration {
        self.interval.unwrap_or(super::DEFAULT_INTERVAL)
    }
}

/// A host name to report: not empty, one line, at most 253 bytes (a DNS name's limit).
fn parse_hostname(s: &str) -> Result<String, String> {
    let name = s.trim();
    if name.is_empty() {
        Err("an empty host name".into())
    } else if name.len() > 253 || name.chars().any(char::is_control) {
        Err("not a host name (at most 253 characters, no control characters)".into())
    } else {
        Ok(name.to_string())
    }
}
