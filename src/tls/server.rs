//! The server's TLS configuration: its certificate chain and key re-read from their files when
//! either changes (checked at each handshake: two `stat`s), so rotating them needs no restart; a
//! new pair that does not load is logged in one line and the previous one stays served. Client
//! certificates are verified against a CA file when asked (mutual TLS).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{RootCertStore, ServerConfig};

use super::{TlsError, pem, provider};

/// Whether clients must show a certificate signed by the CA file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// Verified when a client sends one; a client without one is let in.
    VerifyIfGiven,
    /// Every client must send one, and it must verify.
    Require,
}

/// Where the server's TLS comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// The CA file client certificates are verified against, and how.
    pub clients: Option<(PathBuf, ClientAuth)>,
}

/// The configuration to accept connections with; the files are read now (a fault is the start's).
pub fn config(settings: &Settings) -> Result<Arc<ServerConfig>, TlsError> {
    let provider = provider();
    let resolver = Reloading::new(&settings.cert, &settings.key, Arc::clone(&provider))?;
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| rejected(&settings.cert, &e))?;
    let builder = match &settings.clients {
        None => builder.with_no_client_auth(),
        Some((ca, auth)) => {
            let mut roots = RootCertStore::empty();
            let (added, _) = roots.add_parsable_certificates(pem::certificates(ca)?);
            if added == 0 {
                return Err(TlsError::Rejected {
                    path: ca.clone(),
                    what: "no usable CA certificate in it".into(),
                });
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(roots.into(), provider);
            let verifier = match auth {
                ClientAuth::Require => verifier,
                ClientAuth::VerifyIfGiven => verifier.allow_unauthenticated(),
            };
            builder.with_client_cert_verifier(verifier.build().map_err(|e| rejected(ca, &e))?)
        }
    };
    let mut config = builder.with_cert_resolver(Arc::new(resolver));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn rejected(path: &Path, e: &dyn std::fmt::Display) -> TlsError {
    TlsError::Rejected {
        path: path.to_path_buf(),
        what: e.to_string(),
    }
}

/// What tells a file changed: modification time, size and inode (a rename-into-place counts).
type Stamp = Option<(SystemTime, u64, u64)>;

fn stamp(path: &Path) -> Stamp {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len(), m.ino()))
}

/// The chain and key, checked to belong together.
fn load(cert: &Path, key: &Path, provider: &CryptoProvider) -> Result<Arc<CertifiedKey>, TlsError> {
    let chain = pem::certificates(cert)?;
    let der = pem::private_key(key)?;
    CertifiedKey::from_der(chain, der, provider)
        .map(Arc::new)
        .map_err(|e| match e {
            rustls::Error::InconsistentKeys(_) => TlsError::KeyMismatch {
                cert: cert.to_path_buf(),
                key: key.to_path_buf(),
            },
            other => rejected(key, &other),
        })
}

/// A certificate resolver that re-reads the files when their stamps change.
#[derive(Debug)]
pub struct Reloading {
    cert: PathBuf,
    key: PathBuf,
    provider: Arc<CryptoProvider>,
    state: Mutex<Loaded>,
}

#[derive(Debug)]
struct Loaded {
    /// The stamps last tried, loaded or not (a failed pair is logged once, not per handshake).
    tried: (Stamp, Stamp),
    served: Arc<CertifiedKey>,
}

impl Reloading {
    pub fn new(cert: &Path, key: &Path, provider: Arc<CryptoProvider>) -> Result<Self, TlsError> {
        let tried = (stamp(cert), stamp(key));
        let served = load(cert, key, &provider)?;
        Ok(Reloading {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
            provider,
            state: Mutex::new(Loaded { tried, served }),
        })
    }

    /// The pair to serve now: re-read first if the files changed since last tried.
    pub fn current(&self) -> Arc<CertifiedKey> {
        let now = (stamp(&self.cert), stamp(&self.key));
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if now != state.tried {
            state.tried = now;
            match load(&self.cert, &self.key, &self.provider) {
                Ok(pair) => {
                    state.served = pair;
                    crate::say!(
                        "gpumon: TLS: {} changed: serving the new certificate",
                        self.cert.display()
                    );
                }
                Err(e) => crate::say!("gpumon: TLS: {e}; the previous certificate is still served"),
            }
        }
        Arc::clone(&state.served)
    }
}

impl ResolvesServerCert for Reloading {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}
