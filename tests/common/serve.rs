//! The serve harness: `gpumon serve` (or any child) on a loopback port, killed on drop, and a
//! minimal HTTP/1.1 client on a raw `TcpStream` whose every read and write times out.
#![allow(dead_code, reason = "each test file uses the part it needs")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Longest wait for one read or write (a test never hangs on a socket).
pub const IO_TIMEOUT: Duration = Duration::from_secs(20);
/// Polls of a condition, 100 ms apart (30 s).
pub const POLLS: u32 = 300;

/// A child process killed and reaped when dropped, also when a test fails.
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `gpumon serve --listen 127.0.0.1:0 ARGS`, with the address it printed.
pub struct Server {
    pub child: Guard,
    pub addr: SocketAddr,
    /// Its stderr's lines after the first.
    pub log: mpsc::Receiver<String>,
}

impl Server {
    pub fn start(args: &[&str]) -> Server {
        Server::start_with_env(args, &[])
    }

    /// The same, with these environment variables set (and `NODE_NAME` cleared otherwise).
    pub fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_gpumon"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .env_remove("NODE_NAME")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("gpumon starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let child = Guard(child);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("gpumon serve says where it listens");
        let addr = line
            .strip_prefix("gpumon: serving http://")
            .or_else(|| line.strip_prefix("gpumon: serving https://"))
            .and_then(|rest| rest.split('/').next())
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("unexpected first line: {line}"));
        Server {
            child,
            addr,
            log: rx,
        }
    }

    /// `gpumon serve --replay FILE --speed 1000`, once the recording has ended (its last sample
    /// then stays served, so the server holds still).
    pub fn replayed(file: &std::path::Path) -> Server {
        let server = Server::start(&["--replay", file.to_str().unwrap(), "--speed", "1000"]);
        server.wait_until("ok: the recording ended");
        server
    }

    /// The next stderr line that holds `text` (waiting at most 20 s); the lines before it are
    /// dropped.
    pub fn log_line(&self, text: &str) -> String {
        let deadline = std::time::Instant::now() + IO_TIMEOUT;
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            match self.log.recv_timeout(left) {
                Ok(line) if line.contains(text) => return line,
                Ok(_) => {}
                Err(_) => break,
            }
        }
        panic!("gpumon serve never logged a line with {text:?}");
    }

    /// Whether the process still runs.
    pub fn alive(&mut self) -> bool {
        self.child.0.try_wait().is_ok_and(|s| s.is_none())
    }

    pub fn pid(&self) -> u32 {
        self.child.0.id()
    }

    pub fn get(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        let mut raw = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
        for (k, v) in headers {
            raw.push_str(&format!("{k}: {v}\r\n"));
        }
        raw.push_str("\r\n");
        let bytes = exchange(self.addr, raw.as_bytes()).expect("an answer");
        Reply::parse(&bytes).unwrap_or_else(|| panic!("not HTTP: {bytes:?}"))
    }

    /// Polls `/healthz` until it answers 200 (at most `POLLS` times); its body.
    pub fn wait_until(&self, body_starts: &str) -> String {
        for _ in 0..POLLS {
            let r = self.get("/healthz", &[]);
            if r.status == 200 && r.body.starts_with(body_starts) {
                return r.body;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("/healthz never said {body_starts:?}");
    }

    /// Resident memory of the server, bytes (Linux `/proc`).
    pub fn rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        let kb = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .expect("VmRSS");
        kb * 1024
    }
}

/// Sends `raw` and reads until the server closes (or the timeout): the bytes it answered.
pub fn exchange(addr: SocketAddr, raw: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(IO_TIMEOUT))?;
    s.set_write_timeout(Some(IO_TIMEOUT))?;
    s.write_all(raw)?;
    let mut out = Vec::new();
    s.read_to_end(&mut out)?;
    Ok(out)
}

#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    /// Names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn parse(bytes: &[u8]) -> Option<Reply> {
        let text = String::from_utf8_lossy(bytes);
        let (head, body) = text.split_once("\r\n\r\n")?;
        let mut lines = head.split("\r\n");
        let line = lines.next()?;
        let rest = line
            .strip_prefix("HTTP/1.1 ")
            .or_else(|| line.strip_prefix("HTTP/1.0 "))?;
        let status = rest.get(..3)?.parse().ok()?;
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        Some(Reply {
            status,
            headers,
            body: body.to_string(),
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}
