//! PEM files: certificate chains and private keys, read with a size bound; every fault one line
//! naming the file. A private key readable by every user is refused, as `--token-file` is; so is
//! anything but a regular file (opened without waiting: a FIFO put in a certificate's place never
//! blocks the server, which re-reads these files during a handshake).

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Larger PEM files are refused (a chain is a few KiB; a CA bundle some hundreds).
const MAX_PEM: u64 = 4 << 20;

#[derive(Debug, thiserror::Error)]
pub enum PemError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {kind}, not a regular file", path.display())]
    NotAFile { path: PathBuf, kind: &'static str },
    #[error("{}: larger than {} MiB, not a PEM file", path.display(), MAX_PEM >> 20)]
    TooLarge { path: PathBuf },
    #[error("{}: no {what} in it (PEM `-----BEGIN {what}-----` blocks expected)", path.display())]
    Missing { path: PathBuf, what: &'static str },
    #[error("{}: not PEM ({reason})", path.display())]
    Malformed { path: PathBuf, reason: String },
    #[error("{}: readable by every user (mode {mode:o}); `chmod o-r` it first", path.display())]
    WorldReadable { path: PathBuf, mode: u32 },
}

/// The file's bytes, at most `MAX_PEM`; with `private`, refused when every user may read it.
fn read(path: &Path, private: bool) -> Result<Vec<u8>, PemError> {
    let io = |source| PemError::Io {
        path: path.to_path_buf(),
        source,
    };
    // Non-blocking: opening a FIFO for reading would wait for a writer.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    let kind = meta.file_type();
    if !kind.is_file() {
        let kind = if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_dir() {
            "a directory"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "a device"
        };
        return Err(PemError::NotAFile {
            path: path.to_path_buf(),
            kind,
        });
    }
    let mode = meta.permissions().mode();
    if private && mode & 0o004 != 0 {
        return Err(PemError::WorldReadable {
            path: path.to_path_buf(),
            mode: mode & 0o7777,
        });
    }
    let mut bytes = Vec::new();
    file.take(MAX_PEM + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > MAX_PEM {
        return Err(PemError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    Ok(bytes)
}

fn malformed(path: &Path, e: &pem::Error) -> PemError {
    PemError::Malformed {
        path: path.to_path_buf(),
        reason: e.to_string(),
    }
}

/// Every certificate of the file, in order (a chain: the server's first).
pub fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, PemError> {
    let bytes = read(path, false)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| malformed(path, &e))?;
    if certs.is_empty() {
        return Err(PemError::Missing {
            path: path.to_path_buf(),
            what: "CERTIFICATE",
        });
    }
    Ok(certs)
}

/// The file's first private key (PKCS#8, PKCS#1 RSA or SEC1 EC).
pub fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, PemError> {
    let bytes = read(path, true)?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| match e {
        pem::Error::NoItemsFound => PemError::Missing {
            path: path.to_path_buf(),
            what: "PRIVATE KEY",
        },
        other => malformed(path, &other),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file(mode: u32, text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        std::fs::set_permissions(f.path(), std::fs::Permissions::from_mode(mode)).unwrap();
        f
    }

    #[test]
    fn files_without_the_blocks_asked_for_are_refused_in_one_line() {
        let text = file(0o600, "hello\n");
        let e = certificates(text.path()).unwrap_err().to_string();
        assert!(e.contains("no CERTIFICATE in it"), "{e}");
        let e = private_key(text.path()).unwrap_err().to_string();
        assert!(e.contains("no PRIVATE KEY in it"), "{e}");
        let cut = file(0o600, "-----BEGIN CERTIFICATE-----\nMIIB\n");
        let e = certificates(cut.path()).unwrap_err().to_string();
        assert!(e.contains("not PEM"), "{e}");
        let open = file(0o644, "-----BEGIN PRIVATE KEY-----\n");
        let e = private_key(open.path()).unwrap_err().to_string();
        assert!(e.contains("readable by every user (mode 644)"), "{e}");
        let e = certificates(Path::new("/nonexistent/cert.pem")).unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/cert.pem: "), "{e}");
        assert!(!e.to_string().contains('\n'), "{e}");
    }
}
