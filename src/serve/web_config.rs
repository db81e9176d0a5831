//! `--web-config FILE`: the web configuration file of Prometheus exporters (exporter-toolkit's
//! YAML): `tls_server_config` (`cert_file`, `key_file`, `client_ca_file`, `client_auth_type`) and
//! `basic_auth_users` (user: bcrypt hash). Relative paths are the file's directory's, as the
//! toolkit reads them; a key gpumon does not know is an error, not silently ignored.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::basic::Users;
use crate::tls::server::{ClientAuth, Settings};

/// A larger configuration file is refused.
const MAX_FILE: u64 = 1 << 20;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDoc {
    tls_server_config: Option<TlsDoc>,
    basic_auth_users: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TlsDoc {
    cert_file: PathBuf,
    key_file: PathBuf,
    client_ca_file: Option<PathBuf>,
    client_auth_type: Option<String>,
}

/// What the file asks for.
#[derive(Debug)]
pub struct WebConfig {
    pub tls: Option<Settings>,
    pub users: Option<Users>,
}

#[derive(Debug, thiserror::Error)]
#[error("--web-config {}: {what}", path.display())]
pub struct WebConfigError {
    path: PathBuf,
    what: String,
}

/// Reads and checks the file (the certificates themselves are read by `tls::server::config`).
pub fn read(path: &Path) -> Result<WebConfig, WebConfigError> {
    let fail = |what: String| WebConfigError {
        path: path.to_path_buf(),
        what,
    };
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE + 1).read_to_string(&mut text))
        .map_err(|e| fail(e.to_string()))?;
    if text.len() as u64 > MAX_FILE {
        return Err(fail(format!("larger than {} KiB", MAX_FILE >> 10)));
    }
    parse(&text, path.parent().unwrap_or(Path::new("."))).map_err(fail)
}

/// The document's settings, its relative paths taken from `dir`.
pub fn parse(text: &str, dir: &Path) -> Result<WebConfig, String> {
    // An empty file is an empty document (no TLS, no users), as for the toolkit.
    let doc: FileDoc = if text.trim().is_empty() {
        FileDoc {
            tls_server_config: None,
            basic_auth_users: None,
        }
    } else {
        serde_norway::from_str(text).map_err(|e| one_line(&e.to_string()))?
    };
    let tls = doc.tls_server_config.map(|t| tls(t, dir)).transpose()?;
    let users = doc.basic_auth_users.map(Users::new).transpose()?;
    Ok(WebConfig { tls, users })
}

fn tls(doc: TlsDoc, dir: &Path) -> Result<Settings, String> {
    let auth = match doc.client_auth_type.as_deref().unwrap_or("NoClientCert") {
        "NoClientCert" => None,
        "VerifyClientCertIfGiven" => Some(ClientAuth::VerifyIfGiven),
        "RequireAndVerifyClientCert" => Some(ClientAuth::Require),
        t @ ("RequestClientCert" | "RequireAnyClientCert") => {
            return Err(format!(
                "client_auth_type {t}: gpumon verifies every client certificate it asks for \
                 (use VerifyClientCertIfGiven or RequireAndVerifyClientCert)"
            ));
        }
        other => {
            return Err(format!(
                "client_auth_type {other:?} is not a client auth type"
            ));
        }
    };
    let clients = match (doc.client_ca_file, auth) {
        (Some(ca), Some(auth)) => Some((dir.join(ca), auth)),
        (None, None) => None,
        (Some(_), None) => {
            return Err("client_ca_file is set without a client_auth_type that verifies".into());
        }
        (None, Some(_)) => return Err("client_auth_type verifies, but no client_ca_file".into()),
    };
    Ok(Settings {
        cert: dir.join(doc.cert_file),
        key: dir.join(doc.key_file),
        clients,
    })
}

/// serde_norway's message on one line.
fn one_line(e: &str) -> String {
    e.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_toolkit_format_is_read_with_paths_from_the_file() {
        let hash = bcrypt::hash("pw", 4).unwrap();
        let text = format!(
            "tls_server_config:\n  cert_file: server.crt\n  key_file: /etc/k.pem\n  \
             client_ca_file: ca.crt\n  client_auth_type: RequireAndVerifyClientCert\n\
             basic_auth_users:\n  prometheus: {hash}\n"
        );
        let c = parse(&text, Path::new("/etc/gpumon")).unwrap();
        let tls = c.tls.unwrap();
        assert_eq!(tls.cert, Path::new("/etc/gpumon/server.crt"));
        assert_eq!(tls.key, Path::new("/etc/k.pem"));
        assert_eq!(
            tls.clients,
            Some((PathBuf::from("/etc/gpumon/ca.crt"), ClientAuth::Require))
        );
        assert!(c.users.is_some());
        let empty = parse("", Path::new(".")).unwrap();
        assert!(empty.tls.is_none() && empty.users.is_none());
    }

    #[test]
    fn what_gpumon_cannot_honour_is_one_line_each() {
        let cases = [
            ("tls_server_config:\n  cert_file: a\n", "key_file"),
            (
                "tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS13\n",
                "min_version",
            ),
            (
                "http_server_config:\n  http2: false\n",
                "http_server_config",
            ),
            (
                "tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAnyClientCert\n",
                "verifies every",
            ),
            (
                "tls_server_config:\n  cert_file: a\n  key_file: b\n  client_ca_file: c\n",
                "without a client_auth_type",
            ),
            (
                "tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: VerifyClientCertIfGiven\n",
                "no client_ca_file",
            ),
            ("basic_auth_users:\n  a: plain\n", "not a bcrypt hash"),
            ("[1, 2", ""),
        ];
        for (text, says) in cases {
            let e = parse(text, Path::new(".")).unwrap_err();
            assert!(e.contains(says) && !e.contains('\n'), "{text:?}: {e}");
        }
    }
}
