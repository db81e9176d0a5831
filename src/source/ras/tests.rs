//! The RAS reader against fake services on loopback ports (each serves one connection and stops
//! itself), its parsers on bad answers, and when the watch asks.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use super::client::TcpRas;
use super::*;

/// A stuck job's answer as NCCL 2.28 writes it (its text line first): rank 2 of 4 behind on
/// AllReduce, rank 3 unreachable in a second communicator.
const JSON: &str = r#"
Gathering data about the NCCL communicators (timeout 1s)...{
  "nccl_version": "2.28.9",
  "cuda_runtime_version": 12080,
  "timestamp": "2026-11-20 10:00:00",
  "communicators_count": 2,
  "communicators": [
    {
      "hash": "0xb8338c39bf1d44bc",
      "secondary_hash": "0x1:0x2",
      "size": 4,
      "ranks_count": 4,
      "missing_ranks_count": 0,
      "ranks": [
        RANKS
      ],
      "missing_ranks": []
    },
    {
      "hash": "0x1f",
      "size": 2,
      "ranks": [],
      "missing_ranks": [
        {"rank": 1, "host": "unknown", "pid": -1, "cuda_dev": 1, "nvml_dev": 1,
         "status": {"unresponsive": true, "considered_dead": false}}
      ]
    }
  ],
  "ras": {"collection_time_sec": 0.001, "timeouts_count": 0}
}
"#;

fn json_answer() -> String {
    let ranks: Vec<String> = [(0, 211, 1030), (1, 211, 1031), (2, 196, 1032), (3, 211, 1033)]
        .iter()
        .map(|(r, n, pid)| {
            format!(
                r#"{{"rank": {r}, "host": "10.0.0.7\u001b[2J", "pid": {pid}, "cuda_dev": {r}, "nvml_dev": {r},
                "status": {{"init_state": 0, "async_error": 0, "finalize_called": false,
                "destroy_flag": false, "abort_flag": false}},
                "collective_counts": {{"Broadcast": 1, "AllReduce": {n}}}}}"#
            )
        })
        .collect();
    JSON.replace("RANKS", &ranks.join(","))
}

/// The same hang as NCCL 2.24 says it in text (`shared/reference/distributed-jobs.md`).
const TEXT: &str = "NCCL version 2.24.3 compiled with CUDA 12.8
CUDA runtime version 12080, driver version 12080

Communicators... (0.00s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         1         4         4         4   RUNNING  MISMATCH

Warnings
========

#0-0 (b8338c39bf1d44bc) MISMATCH
  Communicator ranks have different AllReduce operation counts
  3 ranks have launched up to operation 211
  Rank 2 has launched up to operation 196 -- GPU 2 managed by process 1032 on node 10.0.0.7

  Communicator ranks have different Broadcast operation counts
  3 ranks have not launched any operations
  Rank 0 has launched up to operation 4 -- GPU 0 (NVML 5) managed by process 1030 on node 10.0.0.7

Errors
======

#1-0 (000000000000001f) INCOMPLETE
  Missing communicator data from 1 rank
  Rank 1 -- GPU 1 managed by process 2001 on node 10.0.0.8
";

/// How a fake service behaves.
#[derive(Clone, Copy)]
enum Serve {
    Json,
    Text,
    /// Accepts, reads, never answers.
    Hang,
    /// Answers the handshake with something else.
    Garbage,
    /// Answers the status with 10 MB.
    Flood,
}

/// A fake service on a loopback port: serves one connection (or none within 5 s) and stops;
/// its thread hands back every line the client sent.
fn serve(how: Serve) -> (SocketAddr, JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    let handle = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut stream = None;
        for _ in 0..500 {
            match listener.accept() {
                Ok((s, _)) => {
                    stream = Some(s);
                    break;
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        let Some(stream) = stream else { return got };
        stream.set_nonblocking(false).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut out = stream.try_clone().unwrap();
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            got.push(line.clone());
            let answer = match (how, line.as_str()) {
                (Serve::Hang, _) => continue,
                (Serve::Garbage, _) => "HELLO THERE\n".to_string(),
                (_, "CLIENT PROTOCOL 2") => "SERVER PROTOCOL 2\n".into(),
                (Serve::Text, "SET FORMAT json") => {
                    "ERROR: Unknown command set format json\n".into()
                }
                (_, "STATUS") => {
                    let body = match how {
                        Serve::Json => json_answer(),
                        Serve::Flood => "x".repeat(10 << 20),
                        _ => TEXT.to_string(),
                    };
                    let _ = out.write_all(body.as_bytes());
                    break;
                }
                _ => "OK\n".into(),
            };
            if out.write_all(answer.as_bytes()).is_err() {
                break;
            }
        }
        got
    });
    (addr, handle)
}

const SENT: [&str; 4] = [
    "CLIENT PROTOCOL 2",
    "SET FORMAT json",
    "TIMEOUT 1",
    "STATUS",
];

#[test]
fn a_json_answer_names_the_rank_behind_and_the_rank_missing() {
    let (addr, server) = serve(Serve::Json);
    let s = TcpRas.status(addr).unwrap();
    assert_eq!(server.join().unwrap(), SENT, "nothing but the fixed lines");
    assert_eq!(s.nccl_version.as_deref(), Some("2.28.9"));
    assert_eq!(s.comms.len(), 2);
    let c = &s.comms[0];
    assert_eq!(
        (c.id.as_str(), c.size, c.ranks.len()),
        ("b8338c39bf1d44bc", Some(4), 4)
    );
    let r2 = &c.ranks[2];
    assert_eq!(
        (r2.pid, r2.cuda_dev, r2.nvml_dev),
        (Some(1032), Some(2), Some(2))
    );
    assert_eq!(r2.host.as_deref(), Some("10.0.0.7?[2J"), "made printable");
    assert!(r2.status.is_empty(), "zero and false are no trouble");
    let behind = c.behind();
    assert_eq!(behind.len(), 1);
    assert_eq!(
        (
            behind[0].rank.rank,
            behind[0].op,
            behind[0].launched,
            behind[0].most
        ),
        (2, "AllReduce", 196, 211)
    );
    let m = &s.comms[1].missing_ranks[0];
    assert_eq!((m.rank, m.pid, m.host.as_deref()), (1, None, None));
    assert_eq!(m.status, ["unresponsive"]);
}

#[test]
fn a_text_answer_keeps_its_sentences_and_the_counts_it_gives() {
    let (addr, server) = serve(Serve::Text);
    let s = TcpRas.status(addr).unwrap();
    assert_eq!(server.join().unwrap(), SENT);
    assert_eq!(s.nccl_version.as_deref(), Some("2.24.3"));
    let c = &s.comms[0];
    assert_eq!(c.id, "b8338c39bf1d44bc");
    assert!(
        c.said
            .iter()
            .any(|l| l == "3 ranks have launched up to operation 211")
    );
    assert!(
        c.said
            .iter()
            .any(|l| l.starts_with("Rank 2 has launched up to operation 196 -- GPU 2"))
    );
    let behind = c.behind();
    assert_eq!(
        (behind[0].rank.rank, behind[0].launched, behind[0].most),
        (2, 196, 211)
    );
    assert_eq!(
        (behind[0].rank.pid, behind[0].rank.host.as_deref()),
        (Some(1032), Some("10.0.0.7"))
    );
    let r0 = c.ranks.iter().find(|r| r.rank == 0).unwrap();
    assert_eq!((r0.cuda_dev, r0.nvml_dev), (Some(0), Some(5)));
    assert_eq!(
        r0.collectives,
        BTreeMap::from([("Broadcast".to_string(), 4)])
    );
    let missing = &s.comms[1].missing_ranks;
    assert_eq!((missing[0].rank, missing[0].pid), (1, Some(2001)));
    assert_eq!(s.comms[1].said[0], "#1-0 (000000000000001f) INCOMPLETE");
}

#[test]
fn a_refused_silent_strange_or_endless_service_gives_an_error_not_a_wait() {
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    assert_eq!(TcpRas.status(closed), Err(RasError::Refused));
    let (addr, server) = serve(Serve::Hang);
    assert_eq!(TcpRas.status(addr), Err(RasError::Timeout));
    assert_eq!(server.join().unwrap(), ["CLIENT PROTOCOL 2"]);
    let (addr, server) = serve(Serve::Garbage);
    assert!(matches!(TcpRas.status(addr), Err(RasError::Protocol(m)) if m == "HELLO THERE"));
    server.join().unwrap();
    let (addr, server) = serve(Serve::Flood);
    assert_eq!(TcpRas.status(addr), Err(RasError::TooLong));
    server.join().unwrap();
}

#[test]
fn bad_json_is_refused_in_words_and_odd_values_left_out() {
    for bad in [
        "",
        "no document",
        "{",
        r#"{"communicators": 5}"#,
        r#"{"nccl_version": "x"}"#,
    ] {
        assert!(parse::json(bad, 0).is_err(), "{bad:?}");
    }
    let odd = r#"{"communicators": [{"hash": "zz\u0007", "size": -1, "ranks": [
        {"rank": -3}, {"rank": 1, "pid": -1, "cuda_dev": -1, "host": "",
         "status": {"async_error": 3, "abort_flag": true, "x": "y"},
         "collective_counts": {"AllReduce": -2, "Send": 7}}]}]} trailing"#;
    let s = parse::json(odd, 9).unwrap();
    let c = &s.comms[0];
    assert_eq!((c.id.as_str(), c.size), ("zz?", None));
    assert_eq!(c.ranks.len(), 1, "a negative rank is left out");
    let r = &c.ranks[0];
    assert_eq!((r.pid, r.cuda_dev, r.host.as_deref()), (None, None, None));
    assert_eq!(r.status, ["abort_flag", "async_error 3"]);
    assert_eq!(r.collectives, BTreeMap::from([("Send".to_string(), 7)]));
    assert!(text::status("HTTP/1.1 200 OK", 0).is_none());
}

#[test]
fn the_address_comes_from_the_rank_environment_and_no_name_is_looked_up() {
    let env = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    assert_eq!(addr(&env(&[])), RasAddr::At(DEFAULT_ADDR));
    assert_eq!(addr(&env(&[("NCCL_RAS_ENABLE", "0")])), RasAddr::Off);
    assert_eq!(
        addr(&env(&[("NCCL_RAS_ADDR", "127.0.0.2:4000")])),
        RasAddr::At("127.0.0.2:4000".parse().unwrap())
    );
    assert_eq!(
        addr(&env(&[("NCCL_RAS_ADDR", "[::1]:9")])),
        RasAddr::At("[::1]:9".parse().unwrap())
    );
    assert_eq!(
        addr(&env(&[("NCCL_RAS_ADDR", "localhost:7")])),
        RasAddr::At("127.0.0.1:7".parse().unwrap())
    );
    assert_eq!(
        addr(&env(&[("NCCL_RAS_ADDR", "gpu-07:28028")])),
        RasAddr::Off
    );
    assert_eq!(
        addr(&env(&[("NCCL_RAS_ADDR", "0.0.0.0:5")])),
        RasAddr::At("127.0.0.1:5".parse().unwrap())
    );
    assert_eq!(
        addr(&env(&[("NCCL_RAS_ADDR", "10.1.2.3:28028")])),
        RasAddr::Off,
        "no other interface or host"
    );
}

/// A service that answers at once: refused, or a status stamped with the time it was asked.
struct Fake {
    refuse: bool,
    asked: AtomicUsize,
    addrs: Mutex<Vec<SocketAddr>>,
}

impl RasClient for Fake {
    fn status(&self, addr: SocketAddr) -> Result<RasStatus, RasError> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        self.addrs.lock().unwrap().push(addr);
        if self.refuse {
            return Err(RasError::Refused);
        }
        Ok(RasStatus {
            at_ms: u64::from(addr.port()),
            nccl_version: None,
            comms: Vec::new(),
        })
    }
}

fn fake(refuse: bool) -> Arc<Fake> {
    Arc::new(Fake {
        refuse,
        asked: AtomicUsize::new(0),
        addrs: Mutex::new(Vec::new()),
    })
}

/// Waits (boundedly) for the watch's question to be answered.
fn settle(w: &RasWatch) {
    for _ in 0..5_000 {
        if w.asking.as_ref().is_none_or(JoinHandle::is_finished) {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("the fake service did not answer");
}

#[test]
fn the_watch_asks_only_for_a_job_at_most_every_ten_seconds_and_backs_off_when_refused() {
    let f = fake(false);
    let mut w = RasWatch::new(f.clone());
    let at = RasAddr::At(DEFAULT_ADDR);
    assert_eq!(w.poll(1_000, &[]), None);
    assert_eq!(w.poll(1_000, &[RasAddr::Off]), None);
    assert_eq!(f.asked.load(Ordering::SeqCst), 0, "no job, no question");
    assert_eq!(w.poll(2_000, &[at, at]), None);
    settle(&w);
    assert_eq!(
        w.poll(3_000, &[at]).map(|s| s.at_ms),
        Some(28028),
        "the next sample carries it"
    );
    assert_eq!(w.poll(11_999, &[at]), None);
    settle(&w);
    assert_eq!(
        f.asked.load(Ordering::SeqCst),
        1,
        "one question for two ranks, none before 10 s"
    );
    w.poll(12_000, &[at]);
    settle(&w);
    assert!(
        w.poll(12_500, &[]).is_some(),
        "an answer comes even after the job has gone"
    );
    assert_eq!(f.asked.load(Ordering::SeqCst), 2);

    let f = fake(true);
    let mut w = RasWatch::new(f.clone());
    w.poll(1_000, &[at]);
    settle(&w);
    assert_eq!(w.poll(2_000, &[at]), None);
    for t in [11_000, 15_000, 21_999] {
        w.poll(t, &[at]);
    }
    assert_eq!(
        f.asked.load(Ordering::SeqCst),
        1,
        "refused: not again for 20 s"
    );
    w.poll(22_000, &[at]);
    settle(&w);
    assert_eq!(f.asked.load(Ordering::SeqCst), 2);
}

mod live;
