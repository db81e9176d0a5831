//! `gpumon diff` with a side read live from `gpumon serve` on 127.0.0.1: a server against a file
//! (the same and different), one behind a token, and the ways a side cannot be had — a dead port,
//! https, a garbage answer, a host:port without its scheme — each one line and its exit status.
//! A path that exists stays a file whatever its name. Every wait is bounded.

#[path = "common/serve.rs"]
mod serve;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use assert_cmd::Command;
use serve::Server;

const PREALLOC: &str = "tests/fixtures/snapshots/h100-jax-prealloc.json";
const NOPREALLOC: &str = "tests/fixtures/snapshots/h100-jax-noprealloc.json";

fn gpumon() -> Command {
    let mut c = Command::cargo_bin("gpumon").unwrap();
    c.env("GPUMON_NVML_LIB", "/nonexistent/libnvidia-ml.so.1");
    c.timeout(std::time::Duration::from_secs(60));
    c
}

/// Runs `gpumon ARGS`: (status, stdout, stderr).
fn run(args: &[&str]) -> (i32, String, String) {
    let out = gpumon().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A failure: its status, and its one line of stderr.
fn fails(args: &[&str]) -> (i32, String) {
    let (code, out, err) = run(args);
    assert!(out.is_empty(), "{args:?}: {out}");
    assert!(
        err.starts_with("gpumon: ") && err.lines().count() == 1 && !err.contains("panicked"),
        "{args:?}: {err}"
    );
    (code, err)
}

fn url(server: &Server) -> String {
    format!("http://{}", server.addr)
}

/// A private file holding `text`.
fn private(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn a_server_against_a_file_of_itself_and_of_another_machine() {
    // A replay that has ended: its last sample stays served, so the server holds still.
    let server = Server::start(&[
        "--replay",
        "tests/fixtures/recordings/h100-oom-session.ndjson",
        "--speed",
        "1000",
    ]);
    server.wait_until("ok: the recording ended");
    let served = server.get("/snapshot", &[]);
    assert_eq!(served.status, 200, "{served:?}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("served.json");
    std::fs::write(&file, &served.body).unwrap();
    let (file, url) = (file.to_str().unwrap(), url(&server));

    let (code, out, err) = run(&["diff", &url, file]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(&format!("A: {url}\nB: {file}\n")),
        "the header names both sides: {out}"
    );
    assert!(out.contains("No differences"), "{out}");

    let (code, out, err) = run(&["diff", PREALLOC, &url]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(&format!("A: {PREALLOC}\nB: {url}\n")),
        "{out}"
    );
    assert!(!out.contains("No differences"), "{out}");
    let (code, out, err) = run(&["diff", &url, PREALLOC, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    let found = json["differences"].as_array().unwrap();
    assert!(!found.is_empty(), "{out}");
}

#[test]
fn a_server_with_a_token_needs_the_token_file() {
    let dir = tempfile::tempdir().unwrap();
    let token = private(dir.path(), "token", "s3cret\n");
    let wrong = private(dir.path(), "wrong", "guess\n");
    let server = Server::start(&["--demo", "--token-file", &token]);
    server.wait_until("ok");
    let url = url(&server);

    let (code, err) = fails(&["diff", &url, NOPREALLOC]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&url) && err.contains("401") && err.contains("wants a token: --token-file"),
        "{err}"
    );
    let (code, err) = fails(&["diff", &url, NOPREALLOC, "--token-file", &wrong]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("401") && err.contains("refused the token"),
        "{err}"
    );
    let missing = dir.path().join("none").to_str().unwrap().to_string();
    let (code, err) = fails(&["diff", &url, NOPREALLOC, "--token-file", &missing]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--token-file") && err.contains(&missing),
        "{err}"
    );

    let (code, out, err) = run(&["diff", &url, NOPREALLOC, "--token-file", &token]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with(&format!("A: {url}\n")), "{out}");
    // The demo's machine is not the fixture's JAX job: something differs.
    assert!(!out.contains("No differences"), "{out}");
}

#[test]
fn a_dead_port_another_scheme_and_a_missing_scheme_are_one_line_each() {
    let dead = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let (code, err) = fails(&["diff", &dead, PREALLOC]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains(&dead) && err.contains("unreachable"), "{err}");

    let (code, err) = fails(&["diff", PREALLOC, "ftp://gpu-b:9477"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not an http:// or https:// URL"), "{err}");
    let (code, err) = fails(&["diff", "http://gpu-b:99999", PREALLOC]);
    assert_eq!(code, 2, "{err}");

    let (code, err) = fails(&["diff", "gpu-b:9477", PREALLOC]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("http://gpu-b:9477"),
        "the hint names the URL: {err}"
    );
}

#[test]
fn a_server_answering_garbage_is_a_bad_answer() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().take(4) {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                line.clear();
            }
            let body = b"<html>hello</html>";
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body);
        }
    });
    let (code, err) = fails(&["diff", PREALLOC, &url]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&url) && err.contains("bad answer: not JSON"),
        "{err}"
    );
}

#[test]
fn a_path_that_exists_is_a_file_whatever_its_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("http:")).unwrap();
    std::fs::copy(PREALLOC, dir.path().join("http:/gpu-a:9477")).unwrap();
    let fixture = std::fs::canonicalize(PREALLOC).unwrap();
    let out = gpumon()
        .current_dir(dir.path())
        .args(["diff", "http://gpu-a:9477"])
        .arg(&fixture)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(text.contains("No differences"), "{text}");
}
