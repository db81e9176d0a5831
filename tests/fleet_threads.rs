//! The fleet's pollers on the one runtime: forty hosts (one real `gpumon serve --demo` on
//! 127.0.0.1 answering for all of them) are polled with no thread per host — the process's
//! threads (`/proc/self/task`) grow by at most the bounded blocking pool — and only the host the
//! screen opens is asked for each process's history; the others get the compact snapshot.

#[path = "common/serve.rs"]
mod serve;

use std::time::{Duration, Instant};

use gpumon::model::{Config, Machine};
use gpumon::remote::{CONCURRENCY, Client, Schedule};
use gpumon::screen::{Msg, Remote};
use serve::Server;

const HOSTS: usize = 40;
const OPENED: usize = 7;

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

/// The most points any process of the machine has in its history.
fn longest_history(m: &Machine) -> usize {
    m.processes
        .values()
        .map(|t| t.history.iter().count())
        .max()
        .unwrap_or(0)
}

#[test]
fn forty_hosts_share_a_bounded_pool_and_only_the_opened_one_gets_history() {
    let server = Server::start(&["--demo", "--speed", "20"]);
    server.wait_until("ok");
    let url = format!("http://{}", server.addr);
    let before = threads();
    // As the app's runtime: one thread for the tasks, a bounded pool for blocking work (the
    // app's has 4 more for its own sampler).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .max_blocking_threads(CONCURRENCY)
        .enable_all()
        .build()
        .unwrap();
    let mut most = before;
    let mut reports = [0usize; HOSTS];
    let mut longest = [0usize; HOSTS];
    let mut opened_full = false;
    runtime.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Msg>(64);
        let (opened_tx, opened) = tokio::sync::watch::channel(None);
        let config = Config::new(1000, 600_000);
        let interval = Duration::from_millis(100);
        let schedule = Schedule::new(Client::new(None), config, interval, opened, tx);
        for n in 0..HOSTS {
            schedule.spawn_host(n, url.clone());
        }
        drop(schedule);
        // Every host reports three times; then host 7 is opened and must come with its
        // history (at most 60 s in all, 5000 messages).
        let deadline = Instant::now() + Duration::from_secs(60);
        for _ in 0..5000 {
            if Instant::now() > deadline || opened_full {
                break;
            }
            if reports.iter().all(|r| *r >= 3) && opened_tx.borrow().is_none() {
                opened_tx.send_replace(Some(OPENED));
            }
            let Ok(Some(Msg::Remote(n, report))) =
                tokio::time::timeout(Duration::from_secs(5), rx.recv()).await
            else {
                continue;
            };
            most = most.max(threads());
            reports[n] += 1;
            let Remote::Machine(m) = report else {
                panic!("host {n} failed: {report:?}");
            };
            let points = longest_history(&m);
            if n == OPENED && opened_tx.borrow().is_some() {
                opened_full = points > 1;
            } else {
                longest[n] = longest[n].max(points);
            }
        }
    });
    assert!(
        reports.iter().all(|r| *r >= 3),
        "every host reported: {reports:?}"
    );
    assert!(opened_full, "the opened host came with its history");
    assert!(
        longest.iter().all(|p| *p <= 1),
        "the overview's polls are compact: {longest:?}"
    );
    // Each exchange in flight holds a blocking thread, and ureq resolves a new connection's
    // address on a short-lived thread of its own: at most two per permit, whatever the hosts.
    assert!(
        most <= before + 2 * CONCURRENCY,
        "{HOSTS} hosts polled with at most {} more threads, not {}",
        2 * CONCURRENCY,
        most - before
    );
}
