//! A failed TLS exchange told in one line, from either side: what the peer's certificate lacked,
//! or what the peer said of ours, or that the peer does not speak TLS at all.

use rustls::{AlertDescription, CertificateError, Error};

/// Whose certificate the line is about when the fault is the peer's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The server judges a client (mutual TLS).
    Server,
    /// A client judges a server.
    Client,
}

/// `e` in words, for the log line of the server or the error of a client.
pub fn describe(e: &Error, side: Side) -> String {
    let (theirs, ours) = match side {
        Side::Server => ("the client's certificate", "this server's certificate"),
        Side::Client => ("the server's certificate", "the client certificate"),
    };
    match e {
        Error::InvalidCertificate(c) => format!("{theirs} {}", certificate(c, side)),
        Error::NoCertificatesPresented => match side {
            Side::Server => "the client sent no certificate (mutual TLS wants one)".into(),
            Side::Client => "the server sent no certificate".into(),
        },
        Error::AlertReceived(alert) => match alert {
            AlertDescription::UnknownCA => format!("the peer does not trust {ours} (unknown CA)"),
            AlertDescription::CertificateExpired => format!("the peer refused {ours}: expired"),
            AlertDescription::BadCertificate | AlertDescription::UnsupportedCertificate => {
                format!("the peer refused {ours} (bad certificate)")
            }
            AlertDescription::CertificateRequired => {
                "the server wants a client certificate (mutual TLS)".into()
            }
            AlertDescription::DecryptError => {
                format!("the peer could not verify {ours} (does the key match it?)")
            }
            other => format!("the peer ended the handshake ({other:?})"),
        },
        Error::InvalidMessage(_) | Error::InappropriateMessage { .. } => {
            "the peer does not speak TLS (plain http?)".into()
        }
        Error::PeerIncompatible(p) => format!("no TLS version or cipher in common ({p:?})"),
        other => other.to_string(),
    }
}

fn certificate(c: &CertificateError, side: Side) -> String {
    match c {
        CertificateError::UnknownIssuer => match side {
            Side::Server => "is not signed by a CA of the client CA file".into(),
            Side::Client => "is not signed by a trusted CA (give its CA with --tls-ca)".into(),
        },
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => "has expired".into(),
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            "is not valid yet".into()
        }
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
            "is not valid for this host name".into()
        }
        CertificateError::BadSignature | CertificateError::BadEncoding => "is malformed".into(),
        CertificateError::Revoked => "is revoked".into(),
        CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => {
            "is not meant for this use (key usage)".into()
        }
        other => format!("is refused ({other:?})"),
    }
}

/// The rustls error inside an I/O error (what tokio-rustls and ureq hand back), if any.
pub fn rustls_error(e: &std::io::Error) -> Option<&Error> {
    e.get_ref()?.downcast_ref::<Error>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_fault_is_one_line_naming_whose_certificate() {
        let unknown = Error::InvalidCertificate(CertificateError::UnknownIssuer);
        assert!(describe(&unknown, Side::Client).contains("--tls-ca"));
        assert!(describe(&unknown, Side::Server).starts_with("the client's certificate"));
        let expired = Error::InvalidCertificate(CertificateError::Expired);
        assert_eq!(
            describe(&expired, Side::Client),
            "the server's certificate has expired"
        );
        let none = Error::NoCertificatesPresented;
        assert!(describe(&none, Side::Server).contains("no certificate"));
        let plain = Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType);
        assert!(describe(&plain, Side::Server).contains("plain http"));
        let io = std::io::Error::new(std::io::ErrorKind::InvalidData, expired.clone());
        assert_eq!(rustls_error(&io), Some(&expired));
    }
}
