//! `gpumon serve` over TLS on 127.0.0.1, with certificates made in the test: https answers, the
//! certificate re-read when its files change (new connections get the new one), and each bad
//! case (an untrusting client, plain http on the TLS port, a key that is not the certificate's,
//! an expired certificate) one clear line on the side at fault, the server answering the others.
//! The gpumon clients (`diff`, and the client of the fleet screen and `--prometheus`) read the
//! server over https with `--tls-ca`.

#[path = "common/serve.rs"]
mod serve;
#[path = "common/tls.rs"]
mod tls;

use std::process::Command;
use std::time::Duration;

use gpumon::remote::Client;
use gpumon::tls::client::{Files, Trust};
use serve::{POLLS, Reply, Server, exchange};
use tls::{Ca, get, write};

/// `GET /healthz` over TLS until it answers 200 (at most `POLLS` times); the answer.
fn healthy(server: &Server, ca: &str) -> tls::Answer {
    for _ in 0..POLLS {
        if let Ok(a) = get(server.addr, "/healthz", &[ca], None, &[])
            && Reply::parse(&a.bytes).is_some_and(|r| r.status == 200)
        {
            return a;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("/healthz over https never answered 200");
}

/// `gpumon ARGS`: (exit status, stdout, stderr).
fn gpumon(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gpumon"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn https_rotation_and_each_bad_case_leave_the_server_answering() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = Ca::new("gpumon test CA");
    let ca_file = write(d, "ca.pem", &ca.pem());
    let first = ca.leaf("first");
    let cert = write(d, "server.pem", &first.cert);
    let key = write(d, "server.key", &first.key);
    let (cert_s, key_s) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let mut server = Server::start(&["--demo", "--tls-cert", cert_s, "--tls-key", key_s]);
    let answer = healthy(&server, &ca.pem());
    assert_eq!(answer.server_cert, first.der());
    let url = format!("https://{}", server.addr);

    // Plain http on the TLS port: a 400 that says so, and a line in the server's log.
    let raw = b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let reply = Reply::parse(&exchange(server.addr, raw).unwrap()).unwrap();
    assert_eq!(reply.status, 400);
    assert!(reply.body.contains("https://"), "{}", reply.body);
    assert!(server.log_line("plain http").contains("127.0.0.1:"));

    // A client that does not trust the server's CA.
    let other = Ca::new("another CA");
    let e = get(server.addr, "/healthz", &[&other.pem()], None, &[]).err();
    assert!(
        e.as_deref().is_some_and(|e| e.contains("UnknownIssuer")),
        "{e:?}"
    );
    let line = server.log_line("TLS handshake with 127.0.0.1:");
    assert!(
        line.ends_with("the peer does not trust this server's certificate (unknown CA)"),
        "{line}"
    );

    // gpumon's own client: with --tls-ca it reads /snapshot; without, one line why not.
    let (code, out, err) = gpumon(&["diff", &url, &url, "--tls-ca", ca_file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with(&format!("A: {url}\n")), "{out}");
    let (code, _, err) = gpumon(&["diff", &url, &url]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("TLS: the server's certificate is not signed by a trusted CA (give its CA with --tls-ca)"), "{err}");

    // The client of the fleet screen and `--prometheus` (one ureq agent): https with the CA file.
    let trust = Trust::load(Files {
        ca: Some(&ca_file),
        ..Files::default()
    })
    .unwrap();
    let client = Client::with_trust(None, &trust);
    assert!(client.snapshot(&url).is_ok());
    let metrics = client.get(&format!("{url}/metrics"), &[]).unwrap();
    assert!(String::from_utf8_lossy(&metrics).contains("gpumon_build_info"));
    let untrusting = Client::new(None).snapshot(&url).unwrap_err().to_string();
    assert!(
        untrusting.starts_with("TLS: the server's certificate is not signed"),
        "{untrusting}"
    );

    // Rotation: new files, and the next connection gets the new certificate (the files are
    // looked at on each handshake).
    let second = ca.leaf("second");
    write(d, "server.key", &second.key);
    write(d, "server.pem", &second.cert);
    assert_eq!(healthy(&server, &ca.pem()).server_cert, second.der());
    server.log_line("serving the new certificate");

    // A certificate whose key is not in the key file: logged, the previous one still served.
    let third = ca.leaf("third");
    write(d, "server.pem", &third.cert);
    assert_eq!(healthy(&server, &ca.pem()).server_cert, second.der());
    let line = server.log_line("the key is not the certificate's");
    assert!(
        line.ends_with("the previous certificate is still served"),
        "{line}"
    );

    // An expired certificate: the client refuses it, in one line, and the server logs why.
    let expired = ca.expired("expired");
    write(d, "server.key", &expired.key);
    write(d, "server.pem", &expired.cert);
    let e = get(server.addr, "/healthz", &[&ca.pem()], None, &[]).err();
    assert!(e.as_deref().is_some_and(|e| e.contains("Expired")), "{e:?}");
    server.log_line("the peer refused this server's certificate: expired");
    let (code, _, err) = gpumon(&["diff", &url, &url, "--tls-ca", ca_file.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("TLS: the server's certificate has expired"),
        "{err}"
    );

    // A good pair again, and the server still answers.
    let fourth = ca.leaf("fourth");
    write(d, "server.key", &fourth.key);
    write(d, "server.pem", &fourth.cert);
    assert_eq!(healthy(&server, &ca.pem()).server_cert, fourth.der());
    assert!(server.alive());
}

#[test]
fn a_key_that_is_not_the_certificates_or_no_pem_stops_the_start_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = Ca::new("gpumon test CA");
    let (a, b) = (ca.leaf("a"), ca.leaf("b"));
    let cert = write(d, "a.pem", &a.cert);
    let key = write(d, "b.key", &b.key);
    let text = write(d, "notes.txt", "not a certificate\n");
    for (cert, key, says) in [
        (&cert, &key, "the key is not the certificate's"),
        (&text, &key, "no CERTIFICATE in it"),
        (&cert, &text, "no PRIVATE KEY in it"),
    ] {
        let (code, _, err) = gpumon(&[
            "serve",
            "--demo",
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{err}");
    }
}

/// Issue 40: a FIFO put in the certificate's place never hangs the server (it is refused in one
/// line, the previous pair still served, http answered on), and a flood of bad handshakes is
/// logged at most ten lines a minute, the rest counted.
#[test]
fn a_fifo_certificate_and_a_flood_of_bad_handshakes() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = Ca::new("gpumon test CA");
    let first = ca.leaf("first");
    let cert = write(d, "server.pem", &first.cert);
    let key = write(d, "server.key", &first.key);
    let server = Server::start(&[
        "--demo",
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ]);
    healthy(&server, &ca.pem());
    std::fs::remove_file(&cert).unwrap();
    let made = Command::new("mkfifo").arg(&cert).status().unwrap();
    assert!(made.success());
    assert_eq!(healthy(&server, &ca.pem()).server_cert, first.der());
    let line = server.log_line("a FIFO, not a regular file");
    assert!(
        line.ends_with("the previous certificate is still served"),
        "{line}"
    );

    for _ in 0..200 {
        if let Ok(mut s) = std::net::TcpStream::connect(server.addr) {
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            // A handshake record holding garbage.
            let _ = s.write_all(b"\x16\x03\x01\x00\x08garbage!");
            let mut rest = Vec::new();
            let _ = std::io::Read::read_to_end(&mut s, &mut rest);
        }
    }
    healthy(&server, &ca.pem());
    let mut lines = vec![server.log_line("TLS handshake with")];
    while let Ok(l) = server.log.recv_timeout(Duration::from_millis(500)) {
        lines.push(l);
    }
    let failures = lines.iter().filter(|l| l.contains("TLS handshake")).count();
    assert!(failures <= 10, "{failures} lines: {lines:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("more this minute are counted")),
        "{lines:#?}"
    );
}
