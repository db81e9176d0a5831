//! The clients' TLS options (fleet mode and `diff`): the CA file trusted besides the system's
//! roots, and the certificate shown to servers that ask for one.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Clone, Default, Args)]
pub struct ClientTlsArgs {
    /// Trust the CA certificates in FILE (PEM) for https:// URLs, besides the system's
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// Show this client certificate (PEM) to https servers that ask for one (mutual TLS)
    #[arg(
        long = "tls-client-cert",
        value_name = "FILE",
        requires = "tls_client_key"
    )]
    pub tls_client_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM; not readable by every user)
    #[arg(
        long = "tls-client-key",
        value_name = "FILE",
        requires = "tls_client_cert"
    )]
    pub tls_client_key: Option<PathBuf>,
}
