//! The HTTP client of remote hosts and Prometheus (ureq; http, or https through rustls with the
//! roots and client certificate of `tls::client::Trust`): bounded connect and read
//! times (2 s, 5 s; 10 s for the whole exchange), a bounded answer, an optional bearer token, and every fault as one short line that
//! says what kind it is ("unreachable: …", "slow: …", "refused: …", "bad answer: …").

use std::io::ErrorKind;
use std::path::Path;
use std::time::Duration;

use crate::snapshot::{self, Snapshot, SnapshotError};
use crate::tls::client::Trust;
use crate::tls::faults::{self, Side};

/// Time to open the connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Time for the answer's head, and again for its body.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Larger answers are refused.
pub const MAX_ANSWER: u64 = 64 << 20;

/// Why a host could not be read; `Display` is the overview's line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    #[error("unreachable: {0}")]
    Unreachable(String),
    #[error("slow: no complete answer within {0}")]
    Slow(String),
    #[error("refused: HTTP {0}")]
    Status(String),
    #[error("bad answer: {0}")]
    BadAnswer(String),
    #[error("TLS: {0}")]
    Tls(String),
}

/// One agent for every host (its connections are reused between polls).
#[derive(Clone)]
pub struct Client {
    agent: ureq::Agent,
    token: Option<String>,
}

impl Client {
    /// With the default times (`CONNECT_TIMEOUT`, `READ_TIMEOUT`; twice that for the whole),
    /// https trusting the system's roots.
    pub fn new(token: Option<String>) -> Client {
        Client::with_trust(token, &Trust::system())
    }

    /// With the default times, https as `trust` says.
    pub fn with_trust(token: Option<String>, trust: &Trust) -> Client {
        Client::with_read_timeout(token, READ_TIMEOUT, trust)
    }

    /// With another read time (tests); the whole exchange gets twice it.
    pub fn with_read_timeout(token: Option<String>, read: Duration, trust: &Trust) -> Client {
        let config = ureq::Agent::config_builder()
            .tls_config(tls_config(trust))
            .http_status_as_error(false)
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .timeout_recv_response(Some(read))
            .timeout_recv_body(Some(read))
            .timeout_global(Some(read * 2))
            .max_response_header_size(64 << 10)
            // A pool per host (`own_pool`): buffers sized for a head and a request, not 128 KiB each.
            .input_buffer_size(64 << 10)
            .output_buffer_size(16 << 10)
            .user_agent(concat!("gpumon/", env!("CARGO_PKG_VERSION")))
            .build();
        Client {
            agent: config.into(),
            token,
        }
    }

    /// The same client with a connection pool of its own, for one host: each host keeps its
    /// connection between polls however many hosts there are (a shared pool keeps only a few,
    /// and is searched through on every request).
    pub fn own_pool(&self) -> Client {
        Client {
            agent: ureq::Agent::new_with_config(self.agent.config().clone()),
            token: self.token.clone(),
        }
    }

    /// The body of a 200 answer to `GET url?query`.
    pub fn get(&self, url: &str, query: &[(&str, &str)]) -> Result<Vec<u8>, FetchError> {
        let mut request = self.agent.get(url);
        for (k, v) in query {
            request = request.query(*k, *v);
        }
        if let Some(token) = &self.token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        let mut response = request.call().map_err(fault)?;
        let status = response.status();
        if !status.is_success() {
            let hint = match status.as_u16() {
                401 | 403 if self.token.is_none() => " (the server wants a token: --token-file)",
                401 | 403 => " (the server refused the token of --token-file)",
                404 => " (not a gpumon serve URL?)",
                400 => " (a TLS port? try https://)",
                _ => "",
            };
            return Err(FetchError::Status(format!("{status}{hint}")));
        }
        response
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER)
            .read_to_vec()
            .map_err(fault)
    }

    /// A host's `/snapshot`, checked as `gpumon snapshot` files are.
    pub fn snapshot(&self, base: &str) -> Result<Snapshot, FetchError> {
        self.snapshot_with(base, true)
    }

    /// A host's `/snapshot`; without `history`, the compact one (`?history=0`: each process
    /// carries only its latest point), with it the fine history without the coarse tiers
    /// (`?tiers=0`: a poll every interval would otherwise carry days of buckets); a server that
    /// predates either sends the whole.
    pub fn snapshot_with(&self, base: &str, history: bool) -> Result<Snapshot, FetchError> {
        let query: &[(&str, &str)] = if history {
            &[("tiers", "0")]
        } else {
            &[("history", "0")]
        };
        let bytes = self.get(&format!("{base}/snapshot"), query)?;
        snapshot::parse(Path::new("/snapshot"), &bytes).map_err(|e| {
            FetchError::BadAnswer(match e {
                SnapshotError::NotJson { .. } => "not JSON, not a gpumon snapshot".to_string(),
                other => other
                    .to_string()
                    .trim_start_matches("/snapshot: ")
                    .to_string(),
            })
        })
    }
}

/// ureq's TLS set-up: rustls with gpumon's provider, `trust`'s roots and client certificate.
fn tls_config(trust: &Trust) -> ureq::tls::TlsConfig {
    use rustls::pki_types::PrivateKeyDer;
    use ureq::tls::{Certificate, ClientCert, PrivateKey, RootCerts, TlsProvider};
    let roots: Vec<Certificate<'static>> = trust
        .roots
        .iter()
        .map(|c| Certificate::from_der(c).to_owned())
        .collect();
    let identity = trust.identity.as_ref().and_then(|pair| {
        let chain: Vec<_> = pair
            .0
            .iter()
            .map(|c| Certificate::from_der(c).to_owned())
            .collect();
        // ureq takes a key with its kind only from PEM (its kind type is not public).
        use base64::Engine as _;
        let label = match &pair.1 {
            PrivateKeyDer::Pkcs1(_) => "RSA PRIVATE KEY",
            PrivateKeyDer::Sec1(_) => "EC PRIVATE KEY",
            _ => "PRIVATE KEY",
        };
        let body = base64::engine::general_purpose::STANDARD.encode(pair.1.secret_der());
        let pem = format!("-----BEGIN {label}-----\n{body}\n-----END {label}-----\n");
        let key = PrivateKey::from_pem(pem.as_bytes()).ok()?;
        Some(ClientCert::new_with_certs(&chain, key))
    });
    ureq::tls::TlsConfig::builder()
        .provider(TlsProvider::Rustls)
        .unversioned_rustls_crypto_provider(crate::tls::provider())
        .root_certs(RootCerts::new_with_certs(&roots))
        .client_cert(identity)
        .build()
}

/// The fault's kind and a short reason.
fn fault(e: ureq::Error) -> FetchError {
    if let ureq::Error::Io(io) = &e
        && let Some(tls) = faults::rustls_error(io)
    {
        return FetchError::Tls(faults::describe(tls, Side::Client));
    }
    match e {
        ureq::Error::Rustls(tls) => FetchError::Tls(faults::describe(&tls, Side::Client)),
        ureq::Error::Timeout(ureq::Timeout::Connect) => FetchError::Slow(format!(
            "{} (connect)",
            humantime::format_duration(CONNECT_TIMEOUT)
        )),
        ureq::Error::Timeout(t) => FetchError::Slow(format!("the time allowed ({t})")),
        ureq::Error::Io(io) => match io.kind() {
            ErrorKind::ConnectionRefused => FetchError::Unreachable("connection refused".into()),
            ErrorKind::TimedOut | ErrorKind::WouldBlock => {
                FetchError::Slow("the time allowed (read)".into())
            }
            ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset | ErrorKind::BrokenPipe => {
                FetchError::BadAnswer("the connection closed before a whole answer".into())
            }
            _ => FetchError::Unreachable(io.to_string()),
        },
        ureq::Error::HostNotFound => FetchError::Unreachable("host name not found".into()),
        ureq::Error::ConnectionFailed => FetchError::Unreachable("connection failed".into()),
        ureq::Error::BodyExceedsLimit(_) => {
            FetchError::BadAnswer(format!("larger than {} MiB", MAX_ANSWER >> 20))
        }
        ureq::Error::Protocol(p) => FetchError::BadAnswer(format!("not HTTP ({p})")),
        ureq::Error::LargeResponseHeader(..) => FetchError::BadAnswer("headers too large".into()),
        other => FetchError::BadAnswer(other.to_string()),
    }
}
