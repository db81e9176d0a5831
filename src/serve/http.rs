//! The HTTP/1 server of `gpumon serve` (hyper on the tokio runtime): GET `/metrics`,
//! `/snapshot` (`?history=0`: the compact one a fleet's overview asks for) and `/healthz` from
//! the latest published snapshot, with bounded connections,
//! header size, header read time and connection lifetime, and the optional bearer token.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Body as _, Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use super::auth::Token;
use super::exposition;
use super::metrics::{self, Select};
use super::{Latest, Published};
use crate::snapshot::SourceDoc;

/// Wait after a failed accept (out of file descriptors) before the next.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// Time a connection past its lifetime gets to finish the response it is sending.
const GRACE: Duration = Duration::from_secs(5);

/// Bounds on what clients may hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Open connections; more are closed as soon as accepted.
    pub max_connections: usize,
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
    pub select: Select,
    pub limits: Limits,
}

/// Accepts connections until the task is dropped.
pub async fn serve(listener: TcpListener, latest: Latest, config: Arc<Config>) {
    let permits = Arc::new(Semaphore::new(config.limits.max_connections));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(ACCEPT_BACKOFF).await;
            continue;
        };
        let Ok(permit) = Arc::clone(&permits).try_acquire_owned() else {
            continue; // Too many connections: this one is closed unanswered.
        };
        let (latest, config) = (latest.clone(), Arc::clone(&config));
        tokio::spawn(async move {
            connection(stream, latest, config).await;
            drop(permit);
        });
    }
}

async fn connection(stream: TcpStream, latest: Latest, config: Arc<Config>) {
    let limits = config.limits;
    let service = service_fn(move |req: Request<Incoming>| {
        let response = respond(&req, &latest, &config);
        async move { Ok::<_, Infallible>(response) }
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

fn respond(req: &Request<Incoming>, latest: &Latest, config: &Config) -> Reply {
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
    if let Some(token) = &config.token {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .map(HeaderValue::as_bytes);
        if !token.allows(given) {
            let mut r = plain(StatusCode::UNAUTHORIZED, "a bearer token is required\n");
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return r;
        }
    }
    let Some(published) = published else {
        return plain(StatusCode::SERVICE_UNAVAILABLE, "no sample yet\n");
    };
    if path == "/snapshot" {
        let compact = req
            .uri()
            .query()
            .is_some_and(|q| q.split('&').any(|kv| kv == "history=0"));
        let body = if compact {
            published.compact_json()
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
