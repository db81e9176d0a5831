//! NCCL's RAS service, read only: while the machine has a distributed job, its status is asked
//! every `period::RAS` (10 s; `period::RAS_REFUSED`, 20 s, after a refused connection), on a
//! thread of its own so that no tick waits for it; the answer goes out in the next sample.
//!
//! The service (NCCL >= 2.24, one per host, `127.0.0.1:28028` unless a rank's initial
//! environment says `NCCL_RAS_ADDR` or `NCCL_RAS_ENABLE=0`) is asked as NCCL's own `ncclras`
//! does (`client.rs`); nothing is sent but the protocol's fixed lines. `RasClient` is the trait
//! the live source reads through; `client::TcpRas` the real one, built only by `cmd::sources`.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::period::{self, Period};
use crate::sample::RasStatus;

pub mod client;
mod parse;
mod text;

/// Where the service listens unless the job says otherwise.
pub const DEFAULT_ADDR: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 28028);
/// The variables of a rank's initial environment that move or turn off the service.
pub const VARIABLES: &[&str] = &["NCCL_RAS_ENABLE", "NCCL_RAS_ADDR"];
/// Services asked in one round at most (two jobs on one host may each have one).
const MAX_SERVICES: usize = 4;

/// Where one rank's RAS service is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RasAddr {
    At(SocketAddr),
    /// `NCCL_RAS_ENABLE=0`, or an `NCCL_RAS_ADDR` that is not `IP:port` or `localhost:port` on
    /// this host's loopback (no name is looked up, and no other host or interface is connected
    /// to: the value is someone else's).
    Off,
}

/// The service's address from a rank's initial environment (`VARIABLES` kept from it).
pub fn addr(vars: &BTreeMap<String, String>) -> RasAddr {
    if vars.get("NCCL_RAS_ENABLE").map(|v| v.trim()) == Some("0") {
        return RasAddr::Off;
    }
    let Some(given) = vars.get("NCCL_RAS_ADDR").map(|v| v.trim()) else {
        return RasAddr::At(DEFAULT_ADDR);
    };
    if let Ok(a) = given.parse::<SocketAddr>() {
        return match a.ip() {
            ip if ip.is_loopback() => RasAddr::At(a),
            // Listening on every interface: loopback is one of them.
            ip if ip.is_unspecified() => RasAddr::At(SocketAddr::new(DEFAULT_ADDR.ip(), a.port())),
            _ => RasAddr::Off,
        };
    }
    match given.rsplit_once(':') {
        Some((host, port)) if host.eq_ignore_ascii_case("localhost") => {
            port.parse::<u16>().map_or(RasAddr::Off, |p| {
                RasAddr::At(SocketAddr::new(DEFAULT_ADDR.ip(), p))
            })
        }
        _ => RasAddr::Off,
    }
}

/// Why the service gave no status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RasError {
    /// Nothing listens there (no NCCL >= 2.24 job, or RAS off).
    #[error("connection refused")]
    Refused,
    #[error("no answer in time")]
    Timeout,
    #[error("{0}")]
    Io(String),
    /// It answered, but not as the RAS protocol does.
    #[error("not a RAS answer: {0}")]
    Protocol(String),
    /// The answer passed `client::MAX_ANSWER` bytes.
    #[error("answer too long")]
    TooLong,
}

/// Asks one RAS service for its status (blocking, bounded in time).
pub trait RasClient: Send + Sync {
    fn status(&self, addr: SocketAddr) -> Result<RasStatus, RasError>;
}

/// When and where the service is asked, and the answer handed to the sample after it came.
pub struct RasWatch {
    client: Arc<dyn RasClient>,
    period: Period,
    /// No new question before this (after a refused connection).
    refused_until_ms: u64,
    asking: Option<JoinHandle<Result<RasStatus, RasError>>>,
}

impl RasWatch {
    pub fn new(client: Arc<dyn RasClient>) -> Self {
        RasWatch {
            client,
            period: Period::new(period::RAS),
            refused_until_ms: 0,
            asking: None,
        }
    }

    /// An answer that came since the last call, if any; and, when `services` (the RAS
    /// addresses of the machine's ranks) is not empty and a question is due, a new question.
    pub fn poll(&mut self, at_ms: u64, services: &[RasAddr]) -> Option<RasStatus> {
        let answer = match self
            .asking
            .take_if(|h| h.is_finished())
            .map(JoinHandle::join)
        {
            Some(Ok(Ok(status))) => Some(status),
            Some(Ok(Err(RasError::Refused))) => {
                self.refused_until_ms = at_ms.saturating_add(ms(period::RAS_REFUSED));
                None
            }
            _ => None,
        };
        let mut addrs: Vec<SocketAddr> = services
            .iter()
            .filter_map(|s| match s {
                RasAddr::At(a) => Some(*a),
                RasAddr::Off => None,
            })
            .collect();
        addrs.sort_unstable();
        addrs.dedup();
        addrs.truncate(MAX_SERVICES);
        if !addrs.is_empty()
            && self.asking.is_none()
            && at_ms >= self.refused_until_ms
            && self.period.due(at_ms)
        {
            let client = Arc::clone(&self.client);
            self.asking = std::thread::Builder::new()
                .name("gpumon-ras".into())
                .spawn(move || ask(client.as_ref(), &addrs))
                .ok();
        }
        answer
    }
}

fn ms(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Every service in `addrs`, their communicators together (each once); refused only when all
/// were.
fn ask(client: &dyn RasClient, addrs: &[SocketAddr]) -> Result<RasStatus, RasError> {
    let mut merged: Option<RasStatus> = None;
    let mut first_error = None;
    for &a in addrs {
        match client.status(a) {
            Ok(s) => match &mut merged {
                None => merged = Some(s),
                Some(m) => {
                    m.at_ms = m.at_ms.max(s.at_ms);
                    for c in s.comms {
                        if !m.comms.iter().any(|k| k.id == c.id) {
                            m.comms.push(c);
                        }
                    }
                }
            },
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    merged.ok_or(first_error.unwrap_or(RasError::Refused))
}

#[cfg(test)]
mod tests;
