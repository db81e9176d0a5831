//! The clients' side (`--remote`, `--hosts`, `--prometheus`, `diff`): the trust roots, the
//! system's (its CA store, as `openssl` reads it) plus the certificates of `--tls-ca`, and the
//! optional client certificate for servers that ask for one (mutual TLS).

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::{TlsError, pem};

/// The certificates a client trusts and the one it shows, if any.
#[derive(Debug, Clone)]
pub struct Trust {
    pub roots: Arc<Vec<CertificateDer<'static>>>,
    pub identity: Option<Arc<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>>,
}

/// The files of the clients' TLS options.
#[derive(Debug, Clone, Copy, Default)]
pub struct Files<'a> {
    pub ca: Option<&'a Path>,
    pub cert: Option<&'a Path>,
    pub key: Option<&'a Path>,
}

impl Trust {
    /// The system's roots (none where it has no CA store), no client certificate.
    pub fn system() -> Trust {
        Trust {
            roots: Arc::new(rustls_native_certs::load_native_certs().certs),
            identity: None,
        }
    }

    /// The system's roots and `files`' certificates.
    pub fn load(files: Files<'_>) -> Result<Trust, TlsError> {
        let mut roots = rustls_native_certs::load_native_certs().certs;
        if let Some(ca) = files.ca {
            roots.extend(pem::certificates(ca)?);
        }
        let identity = match (files.cert, files.key) {
            (Some(cert), Some(key)) => {
                let chain = pem::certificates(cert)?;
                let der = pem::private_key(key)?;
                // The pair is checked now, not at the first handshake.
                rustls::sign::CertifiedKey::from_der(
                    chain.clone(),
                    der.clone_key(),
                    &super::provider(),
                )
                .map_err(|_| TlsError::KeyMismatch {
                    cert: cert.to_path_buf(),
                    key: key.to_path_buf(),
                })?;
                Some(Arc::new((chain, der)))
            }
            _ => None,
        };
        Ok(Trust {
            roots: Arc::new(roots),
            identity,
        })
    }
}
