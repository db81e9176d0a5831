//! `gpumon serve` under a flood of connections that send nothing, re-opened as soon as the
//! server closes them (300 at all times, from the scraper's own address): real scrapes of
//! `/metrics` are still answered, at least 99 in 100. Every wait is bounded.

#[path = "common/serve.rs"]
mod serve;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serve::Server;

const IDLE: usize = 300;
const SCRAPES: usize = 100;

/// Whether the server closed `s` (an end of file or an error, not "nothing yet").
fn closed(s: &mut TcpStream) -> bool {
    let mut byte = [0u8; 1];
    match s.read(&mut byte) {
        // The server never writes to a silent connection: any read that returns is its end.
        Ok(0 | 1) => true,
        Ok(_) => unreachable!("a one-byte buffer"),
        Err(e) => e.kind() != ErrorKind::WouldBlock,
    }
}

fn idle_socket(addr: SocketAddr) -> Option<TcpStream> {
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_nonblocking(true).ok()?;
    Some(s)
}

/// Keeps `IDLE` silent connections open until `stop`, re-opening each the server closes; counts
/// the re-openings.
fn flood(addr: SocketAddr, stop: Arc<AtomicBool>, reopened: Arc<AtomicUsize>) {
    let mut open: Vec<TcpStream> = (0..IDLE).filter_map(|_| idle_socket(addr)).collect();
    // Bounded: at most 10 minutes of passes, 20 ms apart.
    for _ in 0..30_000 {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        open.retain_mut(|s| !closed(s));
        while open.len() < IDLE {
            let Some(s) = idle_socket(addr) else { break };
            open.push(s);
            reopened.fetch_add(1, Ordering::Relaxed);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One scrape: whether `/metrics` answered 200 within a generous bound.
fn scrape(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(5)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = s.set_write_timeout(Some(Duration::from_secs(5)));
    if s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut bytes = Vec::new();
    let _ = s.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    text.starts_with("HTTP/1.1 200") && text.contains("gpumon_gpu_memory_total_bytes")
}

#[test]
fn silent_connections_do_not_lock_out_the_scrapers() {
    let server = Server::start(&["--demo"]);
    server.wait_until("ok");
    let (stop, reopened) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicUsize::new(0)),
    );
    let flooder = {
        let (addr, stop, reopened) = (server.addr, Arc::clone(&stop), Arc::clone(&reopened));
        std::thread::spawn(move || flood(addr, stop, reopened))
    };
    // The flood is up (its first 300 opened and some already closed for newer ones) before the
    // scrapes start.
    for _ in 0..200 {
        if reopened.load(Ordering::Relaxed) > 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let answered = (0..SCRAPES)
        .filter(|_| {
            std::thread::sleep(Duration::from_millis(30));
            scrape(server.addr)
        })
        .count();
    stop.store(true, Ordering::Relaxed);
    flooder.join().unwrap();
    assert!(
        reopened.load(Ordering::Relaxed) > 0,
        "the flood never had a connection closed"
    );
    assert!(
        answered * 100 >= SCRAPES * 99,
        "{answered} of {SCRAPES} scrapes answered under {IDLE} idle connections"
    );
    // And the server is as it was once the flood is gone.
    assert!(scrape(server.addr));
}
