//! `gpumon serve`: the pipeline without the screen. After every event the machine becomes a
//! `Snapshot` (the `gpumon.snapshot/4` document), published on a watch channel; the HTTP side
//! (`http`) answers only from the latest one, so no request ever calls NVML.

pub mod auth;
pub mod basic;
pub mod exposition;
pub mod http;
pub mod https;
pub mod metrics;
pub mod said;
pub mod slots;
#[cfg(test)]
mod tests;
pub mod web_config;

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use hyper::body::Bytes;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::cli::ServeArgs;
use crate::clock::tick_times;
use crate::model::{Config, Event, Machine, SourceState};
use crate::pipeline::alert_maps::AlertMaps;
use crate::pipeline::{self, Feed};
use crate::sampler::Factory;
use crate::snapshot::{LevelDoc, Snapshot};
use crate::source::probe::request::Requests;
use crate::tls::TlsError;
use crate::tls::server::{self as tls_server, ClientAuth, Settings};
use auth::{Token, TokenError};
use web_config::{WebConfig, WebConfigError};

/// History kept for `/snapshot` (as `gpumon snapshot`).
const HISTORY_MS: u64 = 600_000;

/// What a request reads: the latest snapshot and what the server counted over time.
#[derive(Debug)]
pub struct Published {
    /// The latest snapshot, without the coarse tiers (`Snapshot::of_machine_fine`).
    pub snapshot: Snapshot,
    /// A snapshot with them, made at most once a minute (their newest buckets lag by as much;
    /// the fine history covers that time) and when the source has ended; `None` until the
    /// first.
    pub days: Option<Arc<Snapshot>>,
    /// Allocation failures since the server started, by class; failures dropped from the
    /// snapshot's bounded alert list stay counted.
    pub ooms: BTreeMap<String, u64>,
    /// When the last sample arrived (the server's clock); `None`: no sample yet.
    pub sampled_at: Option<Instant>,
    /// `/snapshot`'s body, made by the first request and shared by all (one copy in memory
    /// however many clients read it).
    json: OnceLock<Bytes>,
    /// `/snapshot?history=0`'s body, made and shared the same way.
    compact: OnceLock<Bytes>,
    /// `/snapshot?tiers=0`'s body (the fine history, no coarse tiers), made and shared the same way.
    fine: OnceLock<Bytes>,
}

impl Published {
    pub fn new(
        snapshot: Snapshot,
        days: Option<Arc<Snapshot>>,
        ooms: BTreeMap<String, u64>,
        sampled_at: Option<Instant>,
    ) -> Self {
        Published {
            snapshot,
            days,
            ooms,
            sampled_at,
            json: OnceLock::new(),
            compact: OnceLock::new(),
            fine: OnceLock::new(),
        }
    }

    /// The snapshot as `gpumon snapshot` writes it: with the coarse tiers of `days`.
    pub fn json(&self) -> Bytes {
        self.json
            .get_or_init(|| {
                tick_times::time("serve.json", || match &self.days {
                    Some(days) => {
                        let mut s = self.snapshot.clone();
                        crate::snapshot::tiers::graft(days, &mut s);
                        Bytes::from(s.to_json())
                    }
                    None => Bytes::from(self.snapshot.to_json()),
                })
            })
            .clone()
    }

    /// The document with its fine history and without the coarse tiers (days of buckets): what
    /// a fleet's open host is polled for every interval.
    pub fn fine_json(&self) -> Bytes {
        self.fine
            .get_or_init(|| Bytes::from(self.snapshot.to_json()))
            .clone()
    }

    /// The same document for a fleet's overview: each process's history cut to its latest
    /// point (the GPUs' stay whole), so a poll of many hosts stays small.
    pub fn compact_json(&self) -> Bytes {
        self.compact
            .get_or_init(|| {
                let mut s = self.snapshot.clone();
                for p in &mut s.processes {
                    let keep = p.history.len().saturating_sub(1);
                    p.history.drain(..keep);
                }
                crate::snapshot::tiers::strip(&mut s);
                Bytes::from(s.to_json())
            })
            .clone()
    }
}

/// The receiving side of what `run` publishes; `None` until the source has started.
pub type Latest = watch::Receiver<Option<Arc<Published>>>;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The source could not start (no NVML, …).
    #[error("{0}")]
    Start(String),
    #[error("--token-file {0}")]
    Token(#[from] TokenError),
    #[error("TLS: {0}")]
    Tls(#[from] TlsError),
    #[error(transparent)]
    WebConfig(#[from] WebConfigError),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// Serves until `shutdown` resolves. `recorded_ms`: the sample spacing of a recording being
/// replayed (its samples come `--speed` times faster); `None`: a live source sampled every
/// `--interval`. A replay that ends leaves its last sample served.
pub async fn run(
    factory: Factory,
    args: &ServeArgs,
    recorded_ms: Option<u64>,
    requests: Option<Arc<dyn Requests>>,
    shutdown: impl Future<Output = i32>,
) -> Result<(), ServeError> {
    let token = args.token_file.as_deref().map(Token::read).transpose()?;
    let web = match &args.web_config {
        Some(path) => web_config::read(path)?,
        None => WebConfig {
            tls: tls_settings(args),
            users: None,
        },
    };
    let tls = match &web.tls {
        Some(settings) => Some(tls_server::config(settings)?),
        None => None,
    };
    let listen = |source| ServeError::Listen {
        addr: args.listen,
        source,
    };
    let listener = TcpListener::bind(args.listen).await.map_err(listen)?;
    let addr = listener.local_addr().map_err(listen)?;
    let verified = web
        .tls
        .as_ref()
        .is_some_and(|t| matches!(t.clients, Some((_, ClientAuth::Require))));
    if token.is_none() && web.users.is_none() && !verified && !addr.ip().is_loopback() {
        crate::say!(
            "gpumon: warning: no --token-file: anyone who can reach {addr} reads process, user and GPU data"
        );
    }
    let (interval_ms, tick) = match recorded_ms {
        Some(ms) => {
            let ms = ms.max(1);
            let speed = args.speed.unwrap_or(1.0);
            let tick = Duration::from_millis(ms).div_f64(speed);
            (ms, tick.max(Duration::from_millis(10)))
        }
        None => (
            u64::try_from(args.every().as_millis()).unwrap_or(1000),
            args.every(),
        ),
    };
    let (publish, latest) = watch::channel(None);
    let config = http::Config {
        token,
        users: web.users.map(Arc::new),
        select: metrics::Select {
            processes: !args.no_process_metrics,
            cmdline: args.expose_cmdline,
        },
        limits: http::Limits::default(),
    };
    // The source starts (NVML loads) before anything is served: a machine without a GPU is
    // told so, with nothing said about serving.
    let mut feed = Feed::start(factory, tick);
    tokio::pin!(shutdown);
    let first = tokio::select! {
        first = feed.next() => first,
        _ = &mut shutdown => return Ok(()),
    };
    if let Some(Event::SourceFailed { reason, .. }) = &first {
        return Err(ServeError::Start(reason.clone()));
    }
    let scheme = if tls.is_some() { "https" } else { "http" };
    crate::say!("gpumon: serving {scheme}://{addr}/metrics, /snapshot and /healthz");
    let tls = tls.map(tokio_rustls::TlsAcceptor::from);
    let server = tokio::spawn(http::serve(listener, latest, Arc::new(config), tls));
    let live = recorded_ms.is_none();
    let host = args.hostname.clone();
    let events = Events { first, feed };
    let result = publish_all(
        events,
        &publish,
        interval_ms,
        live,
        requests,
        host,
        shutdown,
    )
    .await;
    server.abort();
    result
}

/// The sampler's events: the first, taken before serving began, then the feed's.
struct Events {
    first: Option<Event>,
    feed: Feed,
}

impl Events {
    async fn next(&mut self) -> Option<Event> {
        match self.first.take() {
            Some(event) => Some(event),
            None => self.feed.next().await,
        }
    }
}

/// `--tls-cert`, `--tls-key` and `--tls-client-ca` (clap makes sure cert and key come together).
fn tls_settings(args: &ServeArgs) -> Option<Settings> {
    let (cert, key) = (args.tls_cert.clone()?, args.tls_key.clone()?);
    Some(Settings {
        cert,
        key,
        clients: args
            .tls_client_ca
            .clone()
            .map(|ca| (ca, ClientAuth::Require)),
    })
}

/// Applies every event to the machine and publishes its snapshot (reporting `hostname`, when
/// given, as its host), until `shutdown`; asks probes for maps during alerts through
/// `requests` (a live machine's only).
async fn publish_all(
    mut feed: Events,
    publish: &watch::Sender<Option<Arc<Published>>>,
    interval_ms: u64,
    live: bool,
    requests: Option<Arc<dyn Requests>>,
    hostname: Option<String>,
    shutdown: impl Future<Output = i32>,
) -> Result<(), ServeError> {
    let mut alert_maps = AlertMaps::default();
    let mut machine = Machine::new(Config::new(interval_ms, HISTORY_MS));
    let mut ooms = BTreeMap::new();
    let mut counted = 0;
    let mut sampled_at = None;
    let mut days: Option<(Option<u64>, Arc<Snapshot>)> = None;
    tokio::pin!(shutdown);
    loop {
        let event = tokio::select! {
            event = feed.next() => event,
            _ = &mut shutdown => return Ok(()),
        };
        let Some(event) = event else {
            // The sampler is done (a replay ended): what was published stays served.
            shutdown.await;
            return Ok(());
        };
        match &event {
            Event::SourceFailed { reason, .. } if machine.info.is_none() => {
                return Err(ServeError::Start(reason.clone()));
            }
            Event::Sample(_) => sampled_at = Some(Instant::now()),
            _ => {}
        }
        let sample = matches!(event, Event::Sample(_));
        tick_times::time("serve.apply", || pipeline::apply(&mut machine, event));
        if let (true, Some(requests)) = (sample, &requests) {
            for ask in alert_maps.due(&machine, machine.now_ms) {
                let requests = Arc::clone(requests);
                // Asked quietly, off the reactor: a failure is the next try's.
                tokio::task::spawn_blocking(move || requests.send(&ask));
            }
        }
        // A replay's snapshot is taken at its recorded time, as `gpumon snapshot --replay`.
        let now = if live {
            crate::clock::unix_ms()
        } else {
            machine.last_sample_ms.unwrap_or(machine.now_ms)
        };
        let mut snapshot = tick_times::time("serve.snapshot", || {
            Snapshot::of_machine_fine(&machine, now)
        });
        if let Some(name) = &hostname {
            snapshot.machine.host = Some(name.clone());
            snapshot.machine.unavailable.remove("host");
        }
        count_failures(&mut ooms, &mut counted, &snapshot);
        // The days of history, at most once a minute (a tick costs what it did without them),
        // and once more when the source has ended, so a finished replay serves every bucket.
        let minute = machine.last_sample_ms.map(|t| t / 60_000);
        let ended = matches!(machine.source, SourceState::Ended);
        if ended || days.as_ref().is_none_or(|(m, _)| *m != minute) {
            days = Some((minute, Arc::new(Snapshot::of_machine(&machine, now))));
        }
        let full = days.as_ref().map(|(_, s)| Arc::clone(s));
        let published = Published::new(snapshot, full, ooms.clone(), sampled_at);
        publish.send_replace(Some(Arc::new(published)));
    }
}

/// Adds the failures raised since the last call. Alerts are newest first and the list only
/// grows at the front (`alerts_dropped` counts those cut from its end), so the new ones are the
/// first `len + dropped - counted`.
fn count_failures(ooms: &mut BTreeMap<String, u64>, counted: &mut u64, s: &Snapshot) {
    let total = s.alerts_dropped + s.alerts.len() as u64;
    let new = usize::try_from(total.saturating_sub(*counted)).unwrap_or(usize::MAX);
    *counted = total;
    for a in s.alerts.iter().take(new) {
        if a.level == LevelDoc::Failure {
            *ooms.entry(a.class.clone()).or_default() += 1;
        }
    }
}
