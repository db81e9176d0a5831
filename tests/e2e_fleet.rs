//! Many hosts end to end (issue 12): two `gpumon serve --demo` on loopback ports and one port
//! where nothing listens, all in one gpumon screen in tmux; one server is killed mid-run and the
//! screen goes on. Only 127.0.0.1; every wait is bounded (the harness gives each 20 s).

#[path = "common/tls.rs"]
mod tls;
#[path = "common/tmux.rs"]
mod tmux;

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};

use tmux::Session;

/// A `gpumon serve`, killed and reaped when dropped (also when the test fails).
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A loopback port free at the time of asking.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn serve_demo(port: u16) -> Server {
    serve_demo_with(port, &[])
}

fn serve_demo_with(port: u16, args: &[&str]) -> Server {
    Server(
        Command::new(env!("CARGO_BIN_EXE_gpumon"))
            .args(["serve", "--demo", "--listen", &format!("127.0.0.1:{port}")])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("gpumon serve starts"),
    )
}

/// The overview's row of the host at `port`.
fn row(screen: &str, port: u16) -> String {
    let name = format!("127.0.0.1:{port}");
    screen
        .lines()
        .find(|l| l.contains(&name) && !l.contains("Enter shows"))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn two_servers_and_a_dead_port_in_one_screen() {
    let (a, b, dead) = (free_port(), free_port(), free_port());
    let server_a = serve_demo(a);
    let _server_b = serve_demo(b);
    let args = format!(
        "--no-local --interval 500ms --remote http://127.0.0.1:{a} --remote http://127.0.0.1:{b} \
         --remote http://127.0.0.1:{dead}"
    );
    let s = Session::start("fleet", &args, (120, 40));
    let screen = s.wait_for(
        |t| {
            row(t, a).contains('%')
                && row(t, b).contains('%')
                && row(t, dead).contains("unreachable since")
        },
        "both servers' GPUs and the dead port unreachable",
    );
    assert!(screen.contains("fleet of 3 hosts"), "{screen}");
    assert!(
        row(&screen, dead).contains("connection refused"),
        "{screen}"
    );

    // One server goes away: its row says so, the other keeps its numbers, keys still work.
    drop(server_a);
    s.wait_for(
        |t| row(t, a).contains("unreachable since") && row(t, b).contains('%'),
        "the killed server unreachable, the other still read",
    );
    s.keys(&["2"]);
    s.wait_for(
        |t| t.contains("host 2/3") && t.contains("processes"),
        "the second host's GPUs and process table",
    );
    s.keys(&["h"]);
    s.wait_for(|t| t.contains("fleet of 3 hosts"), "back to the overview");
    s.keys(&["q"]);
    s.assert_restored(0);
}

#[test]
fn an_https_server_is_read_with_its_ca_and_a_plain_one_named_https_is_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    let ca = tls::Ca::new("fleet CA");
    let pair = ca.leaf("gpu-node");
    let cert = tls::write(dir.path(), "node.pem", &pair.cert);
    let key = tls::write(dir.path(), "node.key", &pair.key);
    let ca_file = tls::write(dir.path(), "ca.pem", &ca.pem());
    let (secure, plain) = (free_port(), free_port());
    let _secure = serve_demo_with(
        secure,
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );
    let _plain = serve_demo(plain);
    let args = format!(
        "--no-local --interval 500ms --tls-ca {} --remote https://127.0.0.1:{secure} \
         --remote https://127.0.0.1:{plain}",
        ca_file.display()
    );
    let s = Session::start("fleet-tls", &args, (160, 40));
    let screen = s.wait_for(
        |t| row(t, secure).contains('%') && row(t, plain).contains("TLS"),
        "the https server's GPUs, and a TLS fault for the plain one",
    );
    assert!(
        row(&screen, plain).contains("does not speak TLS"),
        "{screen}"
    );
    s.keys(&["q"]);
    s.assert_restored(0);
}
