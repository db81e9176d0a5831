//! The remote-host client against a real HTTP server on 127.0.0.1 started by the test: a good
//! snapshot, a slow server, garbage, a wrong schema, 401 without the token, a closed connection
//! and a port where nothing listens — each becomes the right state of its host, and the hosts'
//! pollers never wait on each other. Every wait is bounded in time.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use gpumon::model::{Config, Machine};
use gpumon::remote::{self, Client, FetchError};
use gpumon::screen::{HostState, Msg, State};
use gpumon::snapshot::Snapshot;
use gpumon::source::scripted::build::{GIB, gpu, machine, process};
use gpumon::source::{Framework, Sample};
use gpumon::tls::client::Trust;

const READ: Duration = Duration::from_millis(300);

fn snapshot_json() -> Vec<u8> {
    let mut m = Machine::new(Config::new(1000, 60_000));
    gpumon::pipeline::apply(&mut m, gpumon::model::Event::Started(machine()));
    let g = gpu(0, 80 * GIB, 20 * GIB, GIB / 2);
    let s = Sample {
        at_ms: 1_763_812_900_000,
        processes: vec![process(
            4312,
            &g,
            20 * GIB,
            Framework::Pytorch,
            "python train.py",
        )],
        gpus: vec![g],
        ..Default::default()
    };
    gpumon::pipeline::apply(&mut m, gpumon::model::Event::Sample(s));
    Snapshot::of_machine(&m, 1_763_812_900_000).to_json()
}

fn answer(stream: &mut TcpStream, status: &str, body: &[u8]) {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
}

/// Serves each connection on its own thread by the request path's first part (at most 500
/// connections; the thread ends with the test).
fn server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let good = snapshot_json();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(500) {
            let Ok(mut stream) = stream else { continue };
            let good = good.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut first = String::new();
                let _ = reader.read_line(&mut first);
                let mut auth = false;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some((name, value)) = line.split_once(':') {
                        auth |= name.eq_ignore_ascii_case("authorization")
                            && value.trim() == "Bearer s3cret";
                    }
                }
                let path = first.split(' ').nth(1).unwrap_or("").to_string();
                match path.split('/').nth(1).unwrap_or("") {
                    "ok" => answer(&mut stream, "200 OK", &good),
                    "slow" => std::thread::sleep(READ * 4),
                    "garbage" => answer(&mut stream, "200 OK", b"<html>hello</html>"),
                    "noise" => _ = stream.write_all(b"SSH-2.0-OpenSSH_9.6\r\n\r\n"),
                    "schema" => {
                        answer(&mut stream, "200 OK", br#"{"schema":"gpumon.recording/1"}"#)
                    }
                    "auth" if auth => answer(&mut stream, "200 OK", &good),
                    "auth" => answer(&mut stream, "401 Unauthorized", b""),
                    "prom" => answer(&mut stream, "200 OK", &prometheus()),
                    "short" => {
                        let _ = stream
                            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n{\"sch");
                    }
                    _ => {}
                }
            });
        }
    });
    url
}

/// Both fixture answers in one, as a Prometheus scraping gpumon and dcgm-exporter gives it.
fn prometheus() -> Vec<u8> {
    let read = |n: &str| -> serde_json::Value {
        serde_json::from_slice(
            &std::fs::read(format!("tests/fixtures/prometheus/{n}.json")).unwrap(),
        )
        .unwrap()
    };
    let mut all = read("gpumon");
    let dcgm = read("dcgm")["data"]["result"].as_array().unwrap().clone();
    all["data"]["result"].as_array_mut().unwrap().extend(dcgm);
    serde_json::to_vec(&all).unwrap()
}

/// The one runtime the screen runs its pollers on.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A loopback port where nothing listens.
fn refused() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    drop(l);
    url
}

#[test]
fn each_fault_is_named_for_what_it_is() {
    let base = server();
    let client = Client::with_read_timeout(None, READ, &Trust::system());
    let get = |path: &str| client.snapshot(&format!("{base}/{path}"));
    let s = get("ok").unwrap();
    assert_eq!(s.gpus[0].memory.as_ref().unwrap().used, 20 * GIB);
    let text = |r: Result<Snapshot, FetchError>| r.unwrap_err().to_string();
    assert!(text(get("slow")).starts_with("slow: "));
    assert_eq!(
        text(get("garbage")),
        "bad answer: not JSON, not a gpumon snapshot"
    );
    assert!(
        text(get("noise")).starts_with("bad answer: not HTTP"),
        "{}",
        text(get("noise"))
    );
    assert_eq!(
        text(get("schema")),
        "bad answer: not a gpumon snapshot (schema \"gpumon.recording/1\"; this gpumon reads gpumon.snapshot/4 and gpumon.snapshot/3, gpumon.snapshot/2, gpumon.snapshot/1)"
    );
    assert!(
        text(get("auth")).starts_with("refused: HTTP 401 Unauthorized (the server wants a token")
    );
    assert!(
        text(get("short")).starts_with("bad answer: "),
        "{}",
        text(get("short"))
    );
    assert!(
        text(get("closed")).starts_with("bad answer: "),
        "{}",
        text(get("closed"))
    );
    assert_eq!(
        text(client.snapshot(&refused())),
        "unreachable: connection refused"
    );
    let with_token = Client::with_read_timeout(Some("s3cret".into()), READ, &Trust::system());
    assert!(with_token.snapshot(&format!("{base}/auth")).is_ok());
    let wrong = Client::with_read_timeout(Some("guess".into()), READ, &Trust::system());
    assert!(
        wrong
            .snapshot(&format!("{base}/auth"))
            .unwrap_err()
            .to_string()
            .contains("refused the token")
    );
}

#[test]
fn pollers_report_every_host_and_none_waits_for_another() {
    let base = server();
    let hosts = ["ok", "slow", "garbage", "schema", "auth", "closed"]
        .iter()
        .map(|p| format!("{base}/{p}"))
        .chain([refused()])
        .collect::<Vec<_>>();
    let config = Config::new(200, 60_000);
    let mut state = State::with_hosts(
        config.clone(),
        (0..hosts.len())
            .map(|i| (format!("h{i}"), Machine::new(config.clone())))
            .collect(),
    );
    // The fast hosts answer again while the slow one is still waiting: count reports per host
    // until every host has reported and the good one three times (at most 30 s, 500 messages).
    let mut seen = vec![0usize; hosts.len()];
    runtime().block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Msg>(64);
        let (_opened_tx, opened) = tokio::sync::watch::channel(None);
        let client = Client::with_read_timeout(None, READ, &Trust::system());
        let interval = Duration::from_millis(200);
        let schedule = remote::Schedule::new(client, config.clone(), interval, opened, tx);
        for (n, url) in hosts.iter().enumerate() {
            schedule.spawn_host(n, url.clone());
        }
        drop(schedule);
        let deadline = Instant::now() + Duration::from_secs(30);
        for _ in 0..500 {
            if Instant::now() > deadline || (seen.iter().all(|n| *n > 0) && seen[0] >= 3) {
                break;
            }
            let wait = tokio::time::timeout(Duration::from_millis(500), rx.recv()).await;
            if let Ok(Some(msg)) = wait {
                if let Msg::Remote(n, _) = &msg {
                    seen[*n] += 1;
                }
                state.update(msg);
            }
        }
    });
    assert!(seen.iter().all(|n| *n > 0), "every host reported: {seen:?}");
    assert!(
        seen[0] >= 3 && seen[0] > seen[1],
        "the good host is not held up: {seen:?}"
    );
    // In machine order (the overview sorts the hosts that cannot be read first).
    let mut rows = state.screen.fleet.as_ref().unwrap().rows.clone();
    rows.sort_by_key(|r| r.index);
    assert_eq!(rows[0].used, Some(20 * GIB));
    assert!(matches!(rows[0].state, HostState::Ok { .. }));
    let reason = |i: usize| match &rows[i].state {
        HostState::Failing { reason, .. } => reason.clone(),
        other => panic!("host {i}: {other:?}"),
    };
    assert!(reason(1).starts_with("slow: "));
    assert!(reason(2).starts_with("bad answer: not JSON"));
    assert!(reason(3).starts_with("bad answer: not a gpumon snapshot"));
    assert!(reason(4).starts_with("refused: HTTP 401"));
    assert!(reason(5).starts_with("bad answer: "));
    assert_eq!(reason(6), "unreachable: connection refused");
}

#[test]
fn backoff_doubles_up_to_thirty_seconds() {
    let s = Duration::from_secs(1);
    assert_eq!(remote::backoff(s, 0), s);
    assert_eq!(remote::backoff(s, 3), Duration::from_secs(8));
    assert_eq!(remote::backoff(s, 40), remote::MAX_BACKOFF);
    assert_eq!(
        remote::backoff(Duration::from_secs(60), 2),
        Duration::from_secs(60)
    );
}

#[test]
fn prometheus_hosts_join_the_screen_after_the_local_one() {
    let base = server();
    let config = Config::new(200, 60_000);
    let mut state = State::with_hosts(
        config.clone(),
        ["local", "prometheus"]
            .map(|n| (n.to_string(), Machine::new(config.clone())))
            .to_vec(),
    );
    runtime().block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Msg>(4);
        let (_opened_tx, opened) = tokio::sync::watch::channel(None);
        let client = Client::with_read_timeout(None, READ, &Trust::system());
        let interval = Duration::from_millis(200);
        let schedule = remote::Schedule::new(client, config, interval, opened, tx);
        schedule.spawn_prometheus(1, format!("{base}/prom"));
        for _ in 0..2 {
            let msg = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await;
            state.update(msg.unwrap().unwrap());
        }
    });
    let fleet = state.screen.fleet.as_ref().unwrap();
    assert_eq!(fleet.names, ["local", "a100-12", "gpu-07"]);
    let row = |name: &str| fleet.rows.iter().find(|r| r.name == name).unwrap();
    assert_eq!(row("a100-12").gpus, 2);
    let worst = row("gpu-07").worst.as_ref().unwrap();
    assert_eq!(
        (worst.level, worst.class.as_str()),
        (gpumon::model::Level::Suspected, "fragmentation-risk")
    );
    // Sorted by worst alert: the host with one comes first.
    assert_eq!(fleet.rows[0].name, "gpu-07");
    // Each answer is one more point of each host's history; the alerts are replaced, not piled up.
    let m = &state.machines[2];
    assert_eq!(m.alerts.len(), 1);
    assert_eq!(m.gpus.values().next().unwrap().used.iter().count(), 2);
    for (w, h) in [(120, 40), (200, 50)] {
        insta::assert_snapshot!(format!("prometheus_overview_{w}x{h}"), draw(&state, w, h));
    }
    // A host's own screen names it once ("host 3/3 gpu-07", not "… ─ host gpu-07") and lists
    // its alert once.
    state.update(Msg::Action(gpumon::input::Action::FocusGpu(2)));
    let text = draw(&state, 120, 40);
    let header = text.lines().next().unwrap();
    assert!(header.contains("host 3/3 gpu-07"), "{header}");
    assert_eq!(header.matches("gpu-07").count(), 1, "{header}");
    assert_eq!(
        text.matches("fragmentation-risk active").count(),
        1,
        "{text}"
    );
}

fn draw(state: &State, w: u16, h: u16) -> String {
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| gpumon::view::render(f, state)).unwrap();
    format!("{}", terminal.backend())
}
