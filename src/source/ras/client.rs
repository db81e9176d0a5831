//! The real RAS client: one TCP connection a question, as NCCL's `ncclras` asks. Sends
//! `CLIENT PROTOCOL 2`, `SET FORMAT json` (NCCL >= 2.28.7; an older service says `ERROR` and
//! answers in text), `TIMEOUT 1` and `STATUS`, each a fixed line, and reads the answer to its end.
//! Bounded everywhere: connecting and each handshake line within `STEP`, the whole answer
//! within `ANSWER_WITHIN` and `MAX_ANSWER` bytes.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use super::{RasClient, RasError, parse, text};
use crate::sample::RasStatus;

/// Connecting, and each handshake line's answer.
pub const STEP: Duration = Duration::from_millis(300);
/// The status answer, from `STATUS` to its end: RAS is told to wait at most 1 s for an
/// unresponsive process (`TIMEOUT 1`), which it then names as missing.
pub const ANSWER_WITHIN: Duration = Duration::from_millis(2_000);
/// The longest answer read.
pub const MAX_ANSWER: usize = 1 << 20;
/// The longest handshake line read.
const MAX_LINE: usize = 256;

/// Asks over TCP.
#[derive(Debug, Clone, Copy, Default)]
pub struct TcpRas;

impl RasClient for TcpRas {
    fn status(&self, addr: SocketAddr) -> Result<RasStatus, RasError> {
        let stream = TcpStream::connect_timeout(&addr, STEP).map_err(|e| match e.kind() {
            ErrorKind::ConnectionRefused => RasError::Refused,
            ErrorKind::TimedOut | ErrorKind::WouldBlock => RasError::Timeout,
            _ => RasError::Io(e.to_string()),
        })?;
        let mut conn = Conn {
            stream,
            buf: Vec::new(),
        };
        conn.stream.set_write_timeout(Some(STEP)).map_err(io)?;
        let server = conn.ask("CLIENT PROTOCOL 2\n")?;
        if !server.starts_with("SERVER PROTOCOL ") {
            return Err(RasError::Protocol(short(&server)));
        }
        let json = conn.ask("SET FORMAT json\n")? == "OK";
        // An older service refuses a timeout it does not know of only with an ERROR line.
        conn.ask("TIMEOUT 1\n")?;
        conn.send("STATUS\n")?;
        let answer = conn.rest(Instant::now() + ANSWER_WITHIN)?;
        let answer = String::from_utf8_lossy(&answer);
        let at_ms = crate::clock::unix_ms();
        if json {
            parse::json(&answer, at_ms).map_err(RasError::Protocol)
        } else {
            text::status(&answer, at_ms).ok_or_else(|| RasError::Protocol(short(&answer)))
        }
    }
}

struct Conn {
    stream: TcpStream,
    /// What was read past the last line.
    buf: Vec<u8>,
}

impl Conn {
    fn send(&mut self, line: &str) -> Result<(), RasError> {
        self.stream.write_all(line.as_bytes()).map_err(io)
    }

    /// Sends `line` and reads one answer line (without its newline).
    fn ask(&mut self, line: &str) -> Result<String, RasError> {
        self.send(line)?;
        let deadline = Instant::now() + STEP;
        loop {
            if let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=end).collect();
                let line = String::from_utf8_lossy(&line[..end]);
                return Ok(line.trim_end_matches('\r').to_string());
            }
            if self.buf.len() > MAX_LINE {
                return Err(RasError::Protocol(short(&String::from_utf8_lossy(
                    &self.buf,
                ))));
            }
            if self.fill(deadline)? == 0 {
                return Err(RasError::Protocol("closed before answering".into()));
            }
        }
    }

    /// Everything up to the end of the connection.
    fn rest(&mut self, deadline: Instant) -> Result<Vec<u8>, RasError> {
        while self.fill(deadline)? > 0 {
            if self.buf.len() > MAX_ANSWER {
                return Err(RasError::TooLong);
            }
        }
        Ok(std::mem::take(&mut self.buf))
    }

    /// Reads what has come, waiting until `deadline` at most; 0 at the end of the connection.
    fn fill(&mut self, deadline: Instant) -> Result<usize, RasError> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(RasError::Timeout);
            }
            self.stream.set_read_timeout(Some(left)).map_err(io)?;
            match self.stream.read(&mut chunk) {
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(n);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Err(RasError::Timeout);
                }
                Err(e) => return Err(io(e)),
            }
        }
    }
}

fn io(e: std::io::Error) -> RasError {
    RasError::Io(e.to_string())
}

/// The start of what the service said, printable, for an error.
fn short(s: &str) -> String {
    crate::sample::job::printable(s.trim(), 60)
}
