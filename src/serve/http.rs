//! The HTTP/1 server of `gpumon serve` (hyper on the tokio runtime, over TLS when configured):
//! GET `/metrics`, `/snapshot` (`?history=0`: the compact one a fleet's overview asks for;
//! `?tiers=0`: the fine history without the days of coarse tiers, what a fleet's open host gets) and
//! `/healthz` from the latest published snapshot, with bounded connections (room kept for
//! clients that speak: `slots`), a first-byte wait, header size, header read time and connection
//! lifetime, and the optional bearer token or basic-auth users. Each
//! connection is its own task: a panic while answering one ends that one only (the panic hook logs
//! it, `connection_peer` tells it apart).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Body as _, Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::auth::Token;
use super::basic::Users;
use super::metrics::{self, Select};
use super::slots::Slots;
use super::{Latest, Published};
use super::{exposition, https};
use crate::snapshot::SourceDoc;

/// Wait after a failed accept (out of file descriptors) before the next.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// Time a connection past its lifetime gets to finish the response it is sending.
const GRACE: Duration = Duration::from_secs(5);

/// Bounds on what clients may hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Open connections; past it, the oldest that has sent nothing is closed for a new one, and
    /// a new one is closed as soon as accepted only when every one open has spoken (`slots`).
    pub max_connections: usize,
    /// Open connections of one client address, bounded the same way.
    pub per_client: usize,
    /// A connection that has sent nothing by then is closed.
    pub first_byte: Duration,
    /// A request's headers must arrive within this (slow clients are dropped).
    pub header_timeout: Duration,
    /// Read buffer, hence the largest request head (431 above it).
    pub max_buf: usize,
    /// A connection, kept alive or not, is closed after this.
    pub lifetime: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 256,
            per_client: 64,
            first_byte: Duration::from_secs(2),
            header_timeout: Duration::from_secs(5),
            max_buf: 16 * 1024,
            lifetime: Duration::from_secs(60),
        }
    }
}

/// How requests are answered.
#[derive(Debug)]
pub struct Config {
    pub token: Option<Token>,
    /// `--web-config`'s basic-auth users; with a token too, either lets a client in.
    pub users: Option<Arc<Users>>,
    pub select: Select,
    pub limits: Limits,
}

tokio::task_local! {
    /// The client a connection task answers.
    static PEER: SocketAddr;
}

/// The client whose connection this code runs for, if it runs in one (the panic hook's test).
pub fn connection_peer() -> Option<SocketAddr> {
    PEER.try_with(|peer| *peer).ok()
}

/// Accepts connections until the task is dropped; with `tls`, https only.
pub async fn serve(
    listener: TcpListener,
    latest: Latest,
    config: Arc<Config>,
    tls: Option<TlsAcceptor>,
) {
    let limits = config.limits;
    let slots = Slots::new(limits.max_connections, limits.per_client);
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            tokio::time::sleep(ACCEPT_BACKOFF).await;
            continue;
        };
        let Some((mut slot, evicted)) = slots.admit(peer.ip()) else {
            continue; // Every slot holds a client that spoke: this one is closed unanswered.
        };
        // A client whose request came with its connection speaks now, before the next accept
        // (a burst of silent ones accepted before its task runs must not close it).
        if sent_already(&stream) {
            slot.speaks();
        }
        let (latest, config, tls) = (latest.clone(), Arc::clone(&config), tls.clone());
        // A panic in the task unwinds it (its slot is given back) and tokio keeps running.
        tokio::spawn(PEER.scope(peer, async move {
            // Nothing is read for a connection until it sends: a silent one is closed after
            // `first_byte`, or sooner when its slot is taken for a newer connection.
            let mut first = [0u8; 1];
            if !slot.spoke() {
                tokio::select! {
                    sent = tokio::time::timeout(limits.first_byte, stream.peek(&mut first)) => {
                        if !matches!(sent, Ok(Ok(1..))) || !slot.speaks() {
                            return;
                        }
                    }
                    _ = evicted => return,
                }
            }
            let within = limits.header_timeout;
            match tls {
                None => connection(stream, latest, config).await,
                Some(acceptor) => {
                    if let Some(stream) = https::handshake(stream, peer, &acceptor, within).await {
                        connection(stream, latest, config).await;
                    }
                }
            }
            drop(slot);
        }));
    }
}

/// Whether the client's first bytes are already there (a peek that does not wait).
fn sent_already(stream: &tokio::net::TcpStream) -> bool {
    use rustix::net::{RecvFlags, recv};
    let mut first = [0u8; 1];
    matches!(
        recv(stream, &mut first, RecvFlags::PEEK | RecvFlags::DONTWAIT),
        Ok((1.., _))
    )
}

async fn connection<S>(stream: S, latest: Latest, config: Arc<Config>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let limits = config.limits;
    let service = service_fn(move |req: Request<Incoming>| {
        let (latest, config) = (latest.clone(), Arc::clone(&config));
        async move {
            // Only the guarded paths pay for a password check (bcrypt is slow by design).
            let guarded = matches!(req.uri().path(), "/metrics" | "/snapshot");
            let given = req.headers().get(header::AUTHORIZATION);
            let allowed = !guarded || allows(&config, given.map(HeaderValue::as_bytes)).await;
            Ok::<_, Infallible>(respond(&req, &latest, &config, allowed))
        }
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(limits.max_buf);
    let conn = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    if tokio::time::timeout(limits.lifetime, conn.as_mut())
        .await
        .is_err()
    {
        conn.as_mut().graceful_shutdown();
        let _ = tokio::time::timeout(GRACE, conn).await;
    }
}

type Reply = Response<Full<Bytes>>;

fn reply(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Reply {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    let headers = r.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn plain(status: StatusCode, body: &'static str) -> Reply {
    reply(status, "text/plain; charset=utf-8", body)
}

/// Whether the client may read `/metrics` and `/snapshot`: no auth asked for, the token, or a
/// user's password.
async fn allows(config: &Config, given: Option<&[u8]>) -> bool {
    if config.token.is_none() && config.users.is_none() {
        return true;
    }
    if config.token.as_ref().is_some_and(|t| t.allows(given)) {
        return true;
    }
    match &config.users {
        Some(users) => users.allows(given).await,
        None => false,
    }
}

fn respond(req: &Request<Incoming>, latest: &Latest, config: &Config, allowed: bool) -> Reply {
    if req.method() != Method::GET {
        let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "only GET\n");
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET"));
        return r;
    }
    if !req.body().is_end_stream() {
        // The body is not read: the connection closes after this answer.
        let mut r = plain(StatusCode::PAYLOAD_TOO_LARGE, "a GET has no body\n");
        r.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return r;
    }
    let path = req.uri().path();
    #[cfg(debug_assertions)]
    if path == "/debug/panic" && std::env::var_os("GPUMON_TEST_FAULTS").is_some() {
        panic!("fault injected for tests (GPUMON_TEST_FAULTS, debug builds only)");
    }
    let published = latest.borrow().clone();
    match path {
        "/healthz" => return health(published.as_deref()),
        "/metrics" | "/snapshot" => {}
        _ => {
            return plain(
                StatusCode::NOT_FOUND,
                "not found: try /metrics, /snapshot or /healthz\n",
            );
        }
    }
    if !allowed {
        let (body, challenge) = match (&config.token, &config.users) {
            (Some(_), Some(_)) => (
                "a bearer token or a user's password is required\n",
                "Bearer, Basic realm=\"gpumon\"",
            ),
            (None, Some(_)) => ("a user's password is required\n", "Basic realm=\"gpumon\""),
            _ => ("a bearer token is required\n", "Bearer"),
        };
        let mut r = plain(StatusCode::UNAUTHORIZED, body);
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(challenge),
        );
        return r;
    }
    let Some(published) = published else {
        return plain(StatusCode::SERVICE_UNAVAILABLE, "no sample yet\n");
    };
    if path == "/snapshot" {
        let asked = |what: &str| {
            req.uri()
                .query()
                .is_some_and(|q| q.split('&').any(|kv| kv == what))
        };
        let body = if asked("history=0") {
            published.compact_json()
        } else if asked("tiers=0") {
            published.fine_json()
        } else {
            published.json()
        };
        return reply(StatusCode::OK, "application/json", body);
    }
    let age = published.sampled_at.map(|t| t.elapsed().as_secs_f64());
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let text = crate::clock::tick_times::time("serve.metrics", || {
        metrics::encode(published, age, config.select)
    });
    if exposition::wants_openmetrics(accept) {
        reply(StatusCode::OK, exposition::OPENMETRICS, text)
    } else {
        reply(
            StatusCode::OK,
            exposition::CLASSIC,
            exposition::to_classic(&text),
        )
    }
}

/// 200 once a sample is served and the source is not failing; 503 before, or while it fails.
fn health(published: Option<&Published>) -> Reply {
    let starting = (StatusCode::SERVICE_UNAVAILABLE, "starting: no sample yet\n");
    let (status, body) = match published {
        None => starting,
        Some(p) => match (&p.snapshot.view.source, p.sampled_at) {
            (SourceDoc::Failing { .. }, _) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "failing: the source cannot sample\n",
            ),
            (_, None) => starting,
            (SourceDoc::Ended, _) => (
                StatusCode::OK,
                "ok: the recording ended; its last sample is served\n",
            ),
            _ => (StatusCode::OK, "ok\n"),
        },
    };
    plain(status, body)
}
