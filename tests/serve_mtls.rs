//! `gpumon serve` with client certificates (mutual TLS) and with a Prometheus exporter web
//! configuration file (TLS and bcrypt basic auth), on 127.0.0.1 with certificates made in the
//! test: only clients of the CA get in, each refused one a line in the server's log, and the
//! server goes on answering; gpumon's own client shows its certificate with `--tls-client-cert`.

#[path = "common/serve.rs"]
mod serve;
#[path = "common/tls.rs"]
mod tls;

use std::process::Command;
use std::time::Duration;

use serve::{POLLS, Reply, Server};
use tls::{Ca, Pair, get, write};

/// `GET path` over TLS as `identity`, until the answer's status is no longer 503 (starting).
fn answer(
    server: &Server,
    ca: &str,
    identity: Option<&Pair>,
    path: &str,
    auth: &[(&str, &str)],
) -> Reply {
    for _ in 0..POLLS {
        let a = get(server.addr, path, &[ca], identity, auth).expect("a TLS answer");
        let reply = Reply::parse(&a.bytes).expect("HTTP");
        if reply.status != 503 {
            return reply;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{path} never left 503");
}

#[test]
fn mutual_tls_lets_in_only_clients_of_its_ca() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server_ca = Ca::new("server CA");
    let client_ca = Ca::new("client CA");
    let pair = server_ca.leaf("server");
    let cert = write(d, "server.pem", &pair.cert);
    let key = write(d, "server.key", &pair.key);
    let clients = write(d, "clients.pem", &client_ca.pem());
    let mut server = Server::start(&[
        "--demo",
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
        "--tls-client-ca",
        clients.to_str().unwrap(),
    ]);
    let good = client_ca.leaf("prometheus");
    assert_eq!(
        answer(&server, &server_ca.pem(), Some(&good), "/healthz", &[]).status,
        200
    );

    let stranger = Ca::new("stranger CA").leaf("stranger");
    let expired = client_ca.expired("old");
    for (identity, says) in [
        (
            None,
            "the client sent no certificate (mutual TLS wants one)",
        ),
        (
            Some(&stranger),
            "the client's certificate is not signed by a CA of the client CA file",
        ),
        (Some(&expired), "the client's certificate has expired"),
    ] {
        let e = get(server.addr, "/healthz", &[&server_ca.pem()], identity, &[]).err();
        assert!(e.is_some(), "{says}: let in");
        let line = server.log_line("TLS handshake with 127.0.0.1:");
        assert!(line.ends_with(says), "{line}");
        // And the next good client is still answered.
        assert_eq!(
            answer(&server, &server_ca.pem(), Some(&good), "/healthz", &[]).status,
            200
        );
    }

    // gpumon's client: without a certificate one line; with one, it reads /snapshot.
    let url = format!("https://{}", server.addr);
    let ca_file = write(d, "server-ca.pem", &server_ca.pem());
    let mine = (
        write(d, "me.pem", &good.cert),
        write(d, "me.key", &good.key),
    );
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_gpumon"))
            .args(["diff", &url, &url, "--tls-ca", ca_file.to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("TLS: the server wants a client certificate"),
        "{err}"
    );
    let out = run(&[
        "--tls-client-cert",
        mine.0.to_str().unwrap(),
        "--tls-client-key",
        mine.1.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(server.alive());
}

#[test]
fn a_web_config_file_gives_tls_and_basic_auth() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = Ca::new("gpumon test CA");
    let pair = ca.leaf("server");
    write(d, "server.pem", &pair.cert);
    write(d, "server.key", &pair.key);
    let hash = bcrypt::hash("scrape-me", 4).unwrap();
    // Relative paths: the configuration file's directory's.
    let config = write(
        d,
        "web.yml",
        &format!(
            "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n\
             basic_auth_users:\n  prometheus: {hash}\n"
        ),
    );
    let server = Server::start(&["--demo", "--web-config", config.to_str().unwrap()]);
    assert_eq!(
        answer(&server, &ca.pem(), None, "/healthz", &[]).status,
        200
    );
    let denied = answer(&server, &ca.pem(), None, "/metrics", &[]);
    assert_eq!(denied.status, 401);
    assert_eq!(
        denied.header("www-authenticate"),
        Some("Basic realm=\"gpumon\"")
    );
    // prometheus:wrong, then prometheus:scrape-me.
    let wrong = [("Authorization", "Basic cHJvbWV0aGV1czp3cm9uZw==")];
    assert_eq!(
        answer(&server, &ca.pem(), None, "/metrics", &wrong).status,
        401
    );
    let right = [("Authorization", "Basic cHJvbWV0aGV1czpzY3JhcGUtbWU=")];
    let ok = answer(&server, &ca.pem(), None, "/metrics", &right);
    assert_eq!(ok.status, 200);
    assert!(ok.body.contains("gpumon_build_info"), "{}", ok.body);

    let bad = write(
        d,
        "bad.yml",
        "tls_server_config:\n  cert_file: server.pem\n  min_version: TLS13\n",
    );
    let out = Command::new(env!("CARGO_BIN_EXE_gpumon"))
        .args(["serve", "--demo", "--web-config", bad.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--web-config") && err.contains("min_version"),
        "{err}"
    );
}
