//! TLS for `gpumon serve` and its clients (rustls with the ring provider): PEM files read into
//! certificates and keys (`pem`), the server's configuration whose certificate is re-read when its
//! files change and whose handshake faults are told in one line (`server`), and the clients' trust
//! roots, the system's plus a `--tls-ca` file (`client`).

pub mod client;
pub mod faults;
pub mod pem;
pub mod server;

use std::path::PathBuf;
use std::sync::Arc;

use rustls::crypto::CryptoProvider;

/// The one crypto provider of every TLS configuration gpumon builds.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Why a TLS set-up could not be had; each one line naming the file.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error(transparent)]
    Pem(#[from] pem::PemError),
    #[error("{} and {}: the key is not the certificate's (wrong key file?)", cert.display(), key.display())]
    KeyMismatch { cert: PathBuf, key: PathBuf },
    #[error("{}: {what}", path.display())]
    Rejected { path: PathBuf, what: String },
}
