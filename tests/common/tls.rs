//! TLS for the serve tests: certificates made here (rcgen: a CA, server and client certificates,
//! expired ones), files written 0600 into a temp dir, and a minimal HTTPS client on rustls whose
//! every read and write times out.
#![allow(dead_code, reason = "each test file uses the part it needs")]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, date_time_ymd,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore};

/// A certificate authority made for one test.
pub struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A certificate and its key, PEM.
#[derive(Clone)]
pub struct Pair {
    pub cert: String,
    pub key: String,
}

impl Pair {
    pub fn der(&self) -> CertificateDer<'static> {
        CertificateDer::from_pem_slice(self.cert.as_bytes()).unwrap()
    }
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        Ca { issuer }
    }

    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A certificate for 127.0.0.1 and localhost (server and client use alike).
    pub fn leaf(&self, name: &str) -> Pair {
        self.make(name, false)
    }

    /// One whose validity ended in 2021.
    pub fn expired(&self, name: &str) -> Pair {
        self.make(name, true)
    }

    fn make(&self, name: &str, expired: bool) -> Pair {
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        if expired {
            params.not_before = date_time_ymd(2020, 1, 1);
            params.not_after = date_time_ymd(2021, 1, 1);
        }
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        Pair {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }
}

/// Writes `text` to `dir/name` (mode 0600) by a rename into place, as a rotation would.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, text).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    path
}

/// What an HTTPS exchange gave: the answer's bytes and the server's certificate.
pub struct Answer {
    pub bytes: Vec<u8>,
    pub server_cert: CertificateDer<'static>,
}

/// `GET path` over TLS trusting `roots` (PEM), showing `identity` if given. The error is
/// rustls' where the TLS side failed.
pub fn get(
    addr: SocketAddr,
    path: &str,
    roots: &[&str],
    identity: Option<&Pair>,
    headers: &[(&str, &str)],
) -> Result<Answer, String> {
    let mut store = RootCertStore::empty();
    for pem in roots {
        for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
            store.add(cert.unwrap()).unwrap();
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(store);
    let config = match identity {
        None => builder.with_no_client_auth(),
        Some(p) => builder
            .with_client_auth_cert(
                vec![p.der()],
                PrivateKeyDer::from_pem_slice(p.key.as_bytes()).unwrap(),
            )
            .unwrap(),
    };
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let mut conn = ClientConnection::new(Arc::new(config), name).unwrap();
    let mut sock = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    sock.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    sock.set_write_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut raw = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    for (k, v) in headers {
        raw.push_str(&format!("{k}: {v}\r\n"));
    }
    raw.push_str("\r\n");
    let mut tls = rustls::Stream::new(&mut conn, &mut sock);
    let why = |e: std::io::Error| match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>())
    {
        Some(tls) => format!("{tls:?}"),
        None => e.to_string(),
    };
    tls.write_all(raw.as_bytes()).map_err(why)?;
    let mut bytes = Vec::new();
    match tls.read_to_end(&mut bytes) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !bytes.is_empty() => {}
        Err(e) => return Err(why(e)),
    }
    let server_cert = conn.peer_certificates().unwrap()[0].clone();
    Ok(Answer { bytes, server_cert })
}
