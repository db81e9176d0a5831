//! The TLS side of a `serve` connection: the handshake within the header time, each failure one
//! log line saying whose certificate or what protocol was wrong (at most `said::PER_MINUTE` a
//! minute, the rest counted); a plain-HTTP client on the TLS
//! port gets a 400 that says to use https. The server goes on answering the others.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use super::said::Limited;
use crate::tls::faults::{self, Side};

/// The lines a client's bad handshake or plain http makes, under one budget.
static SAID: Limited = Limited::new();

const PLAIN_ANSWER: &str = "this port speaks https only: use an https:// URL\n";

/// The connection once its handshake succeeded; `None` (logged where the client erred) if not.
pub async fn handshake(
    stream: TcpStream,
    peer: SocketAddr,
    acceptor: &TlsAcceptor,
    within: Duration,
) -> Option<TlsStream<TcpStream>> {
    // A TLS client speaks first, a handshake record (0x16); a letter is an HTTP method.
    let mut first = [0u8; 1];
    match timeout(within, stream.peek(&mut first)).await {
        Ok(Ok(1)) if first[0].is_ascii_alphabetic() => {
            plain_http(stream, peer, within).await;
            return None;
        }
        Ok(Ok(1)) => {}
        _ => return None, // Closed, or silent for the whole header time.
    }
    match timeout(within, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => Some(tls),
        Ok(Err(e)) => {
            // A client that closes without a word (a port check) is not worth a line.
            if let Some(tls) = faults::rustls_error(&e) {
                let why = faults::describe(tls, Side::Server);
                SAID.say(format_args!(
                    "gpumon: TLS handshake with {peer} failed: {why}"
                ));
            }
            None
        }
        Err(_) => None,
    }
}

async fn plain_http(mut stream: TcpStream, peer: SocketAddr, within: Duration) {
    SAID.say(format_args!(
        "gpumon: {peer} sent plain http to the https port; answered 400"
    ));
    let answer = format!(
        "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{PLAIN_ANSWER}",
        PLAIN_ANSWER.len()
    );
    let _ = timeout(within, async {
        // The request is read first: closing on unread bytes would reset the connection and
        // lose the answer.
        let mut head = [0u8; 4096];
        let _ = stream.read(&mut head).await?;
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await
    })
    .await;
}
