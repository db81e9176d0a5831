//! `gpumon serve --demo` over real HTTP on 127.0.0.1: the endpoints and their content types,
//! then bad clients (malformed, oversized, slow, hundreds at once, without the token), after
//! each of which the next scrape is still answered and memory stays bounded.

#[path = "common/serve.rs"]
mod serve;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use serve::{IO_TIMEOUT, POLLS, Reply, Server, exchange};

const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
/// GPU 0's total memory in `/metrics` as the demo recorded it (its first sample's UUID, name
/// and total), on the host the demo names.
fn total() -> String {
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/demo.ndjson");
    let text = std::fs::read_to_string(demo).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    let gpu = &first["gpus"][0];
    format!(
        r#"gpumon_gpu_memory_total_bytes{{Hostname="vm",gpu="0",UUID={},modelName={}}} {}"#,
        gpu["uuid"], gpu["name"], gpu["memory"]["total"]
    )
}

fn scrape_ok(server: &Server) {
    let r = server.get("/metrics", &[("Accept", PROMETHEUS_ACCEPT)]);
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        r.body.contains(&total()) && r.body.ends_with("# EOF\n"),
        "{}",
        r.body
    );
}

/// An answer that is a 4xx, or no answer at all (closed or reset): never a hang or a 2xx.
fn refused(raw: &[u8], answer: std::io::Result<Vec<u8>>) {
    let what = String::from_utf8_lossy(&raw[..raw.len().min(40)]).into_owned();
    match answer {
        Ok(bytes) if bytes.is_empty() => {}
        Ok(bytes) => {
            let r = Reply::parse(&bytes).unwrap_or_else(|| panic!("{what}: not HTTP: {bytes:?}"));
            assert!((400..500).contains(&r.status), "{what}: {r:?}");
        }
        Err(e) => assert!(
            !matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "{what}: the server neither answered nor closed: {e}"
        ),
    }
}

#[test]
fn endpoints_answer_with_the_negotiated_formats() {
    let server = Server::start(&["--demo"]);
    server.wait_until("ok");
    scrape_ok(&server);
    let r = server.get("/metrics", &[("Accept", PROMETHEUS_ACCEPT)]);
    assert_eq!(
        r.header("content-type"),
        Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
    );
    for accept in [None, Some("text/plain"), Some("*/*")] {
        let headers: Vec<(&str, &str)> = accept.map(|a| ("Accept", a)).into_iter().collect();
        let r = server.get("/metrics", &headers);
        assert_eq!(r.status, 200);
        assert_eq!(
            r.header("content-type"),
            Some("text/plain; version=0.0.4; charset=utf-8")
        );
        assert!(
            r.body.contains(&total()) && !r.body.contains("# EOF"),
            "{}",
            r.body
        );
        assert!(r.body.contains("# TYPE gpumon_oom_failures_total counter"));
    }
    let r = server.get("/snapshot", &[]);
    assert_eq!(
        (r.status, r.header("content-type")),
        (200, Some("application/json"))
    );
    let snap = gpumon::snapshot::parse("/snapshot".as_ref(), r.body.as_bytes()).unwrap();
    assert_eq!(
        snap.gpus[0].memory.as_ref().map(|m| m.total),
        Some(85_520_809_984)
    );
    // The whole document carries the coarse history; `?tiers=0` the fine history only, and
    // `?history=0` neither.
    assert!(!snap.gpus[0].used_tiers.is_empty());
    for query in ["/snapshot?tiers=0", "/snapshot?history=0"] {
        let r = server.get(query, &[]);
        let s = gpumon::snapshot::parse("/snapshot".as_ref(), r.body.as_bytes()).unwrap();
        assert!(s.gpus.iter().all(|g| g.used_tiers.is_empty()), "{query}");
        assert!(
            s.processes.iter().all(|p| p.history_tiers.is_empty()),
            "{query}"
        );
        assert_eq!(
            s.gpus[0].used_history.len(),
            snap.gpus[0].used_history.len()
        );
    }
    assert_eq!(server.get("/nope", &[]).status, 404);
    let post = exchange(
        server.addr,
        b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let post = Reply::parse(&post).unwrap();
    assert_eq!((post.status, post.header("allow")), (405, Some("GET")));
    let body = exchange(
        server.addr,
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
    )
    .unwrap();
    assert_eq!(Reply::parse(&body).unwrap().status, 413);
}

#[test]
fn malformed_oversized_and_slow_requests_are_answered_or_dropped() {
    let server = Server::start(&["--demo"]);
    server.wait_until("ok");
    scrape_ok(&server);
    let rss_before = server.rss();
    let big_header = format!(
        "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "a".repeat(64 * 1024)
    );
    let many_headers = format!("GET /metrics HTTP/1.1\r\n{}\r\n", "X-A: b\r\n".repeat(2000));
    let bad: Vec<Vec<u8>> = vec![
        b"GARBAGE\r\n\r\n".to_vec(),
        b"GET\r\n\r\n".to_vec(),
        b"GET /metrics HTTP/9.9\r\n\r\n".to_vec(),
        b"\x00\xff\x10\x80binary\r\n\r\n".to_vec(),
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n".to_vec(),
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n".to_vec(),
        big_header.into_bytes(),
        many_headers.into_bytes(),
    ];
    for _round in 0..3 {
        for raw in &bad {
            refused(raw, exchange(server.addr, raw));
            scrape_ok(&server);
        }
    }
    let oversized = exchange(server.addr, bad[6].as_slice()).unwrap_or_default();
    if let Some(r) = Reply::parse(&oversized) {
        assert_eq!(r.status, 431, "{r:?}");
    }

    // A client that never finishes its request: others are served meanwhile, and it is dropped.
    let mut slow = TcpStream::connect(server.addr).unwrap();
    slow.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    slow.write_all(b"GET /metr").unwrap();
    for _ in 0..3 {
        scrape_ok(&server);
    }
    let mut rest = Vec::new();
    let end = slow.read_to_end(&mut rest);
    refused(b"GET /metr (slow)", end.map(|_| rest));
    scrape_ok(&server);
    let grown = server.rss().saturating_sub(rss_before);
    assert!(grown < 32 << 20, "resident memory grew by {grown} bytes");
}

#[test]
fn hundreds_of_concurrent_connections_leave_the_next_scrape_served() {
    let server = Server::start(&["--demo"]);
    server.wait_until("ok");
    let mut rss_first = 0;
    for round in 0..4 {
        let mut open: Vec<TcpStream> = (0..300)
            .filter_map(|_| TcpStream::connect(server.addr).ok())
            .collect();
        assert!(open.len() >= 256, "only {} connections opened", open.len());
        for s in &mut open {
            s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
            let _ = s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        }
        let mut answered = 0;
        for s in &mut open {
            let mut bytes = Vec::new();
            let end = s.read_to_end(&mut bytes);
            if bytes.starts_with(b"HTTP/1.1 200") {
                answered += 1;
            } else {
                refused(b"GET /healthz (crowd)", end.map(|_| bytes));
            }
        }
        assert!(answered > 0, "round {round}: none answered");
        drop(open);
        // The connection slots are given back as the server sees the closes.
        let mut served = false;
        for _ in 0..POLLS {
            let r = exchange(
                server.addr,
                b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            );
            if r.is_ok_and(|b| b.starts_with(b"HTTP/1.1 200")) {
                served = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(served, "round {round}: the next scrape was not served");
        if round == 0 {
            rss_first = server.rss();
        }
    }
    let grown = server.rss().saturating_sub(rss_first);
    assert!(
        grown < 32 << 20,
        "resident memory grew by {grown} bytes over 3 rounds"
    );
}

#[test]
fn a_token_guards_metrics_and_snapshot_but_not_healthz() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    std::fs::write(&path, "correct-horse\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let server = Server::start(&["--demo", "--token-file", path.to_str().unwrap()]);
    server.wait_until("ok");
    for (auth, status) in [
        (None, 401),
        (Some("Bearer wrong"), 401),
        (Some("Bearer correct-horse-and-more"), 401),
        (Some("Basic correct-horse"), 401),
        (Some("Bearer correct-horse"), 200),
    ] {
        for path in ["/metrics", "/snapshot"] {
            let headers: Vec<(&str, &str)> =
                auth.map(|a| ("Authorization", a)).into_iter().collect();
            let r = server.get(path, &headers);
            assert_eq!(r.status, status, "{path} {auth:?}");
            if status == 401 {
                assert_eq!(r.header("www-authenticate"), Some("Bearer"));
                assert!(!r.body.contains("gpumon_"), "{}", r.body);
            }
        }
    }

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut child = serve::Guard(
        Command::new(env!("CARGO_BIN_EXE_gpumon"))
            .args(["serve", "--demo", "--listen", "127.0.0.1:0", "--token-file"])
            .arg(&path)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut status = None;
    for _ in 0..POLLS {
        status = child.0.try_wait().unwrap();
        if status.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(2),
        "a world-readable token file is refused"
    );
    let mut err = String::new();
    child
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        err.contains("readable by every user") && !err.contains("correct-horse"),
        "{err}"
    );
}

/// A panic while answering one request (a fault only debug builds have, behind
/// GPUMON_TEST_FAULTS) closes that connection with one log line; the server answers the rest.
#[test]
fn a_panic_in_one_request_ends_that_connection_only() {
    let mut server = Server::start_with_env(&["--demo"], &[("GPUMON_TEST_FAULTS", "1")]);
    server.wait_until("ok");
    for _ in 0..2 {
        let raw = b"GET /debug/panic HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        let answer = exchange(server.addr, raw).unwrap_or_default();
        assert!(answer.is_empty(), "{}", String::from_utf8_lossy(&answer));
        let line = server.log_line("panicked");
        assert!(
            line.starts_with("gpumon: answering 127.0.0.1:")
                && line.contains("fault injected for tests")
                && line.ends_with("that connection is closed, the server goes on"),
            "{line}"
        );
        scrape_ok(&server);
    }
    assert!(server.alive());
}

#[test]
fn hostname_and_node_name_name_the_host_in_metrics_and_snapshot() {
    let flag = Server::start_with_env(&["--demo", "--hostname", "node-7"], &[("NODE_NAME", "x")]);
    let env = Server::start_with_env(&["--demo"], &[("NODE_NAME", "gke-pool-1-abcd")]);
    for (server, name) in [(&flag, "node-7"), (&env, "gke-pool-1-abcd")] {
        server.wait_until("ok");
        let metrics = server.get("/metrics", &[]).body;
        let want = total().replace(r#"Hostname="vm""#, &format!(r#"Hostname="{name}""#));
        assert!(metrics.contains(&want), "{metrics}");
        assert!(!metrics.contains(r#"Hostname="vm""#), "{metrics}");
        let snapshot: serde_json::Value =
            serde_json::from_str(&server.get("/snapshot?history=0", &[]).body).unwrap();
        assert_eq!(snapshot["machine"]["host"], name);
    }
    let out = Command::new(env!("CARGO_BIN_EXE_gpumon"))
        .args(["serve", "--demo", "--hostname", " "])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("an empty host name"));
}
