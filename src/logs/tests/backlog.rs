//! A log left behind by its writer (issue 40): read faster, each poll still bounded, its backlog
//! named, and its failures timed by their own lines (or by when they were on disk, saying so),
//! never by when they were read; times a line gives that its log cannot explain are not believed.

use super::*;
use crate::oom::failure::TimeFrom;

/// 2026-11-27T10:00:00Z.
const T: u64 = 1_795_773_600_000;

fn oom_at(time: &str, gib: u32) -> String {
    format!(
        "{time} ERROR {}",
        OOM.replace("2.00 GiB", &format!("{gib}.00 GiB"))
    )
}

/// `mib` MiB of ordinary training lines.
fn filler(mib: usize) -> String {
    let line = "2026-11-27 09:59:59,000 INFO step 100 loss 0.2500 lr 3.0e-4 tokens/s 4096\n";
    line.repeat((mib << 20) / line.len())
}

#[test]
fn a_backlog_is_read_faster_named_and_timed_by_its_lines() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    append(&log, "start\n");
    let mut w = LogWatch::new(std::slice::from_ref(&log));
    w.poll_ms = 60_000;
    assert!(w.poll(T - 1_000, &[]).is_empty());
    // Between two polls the job writes 20 MiB, an OOM stamped by its own time, one without a
    // time, one stamped an hour ahead and one from another year.
    append(&log, &filler(20));
    append(&log, &oom_at("2026-11-27T10:00:00.500Z", 3));
    append(&log, &OOM.replace("2.00 GiB", "4.00 GiB"));
    append(&log, &oom_at("2026-11-27T11:00:00Z", 5));
    append(&log, &oom_at("2019-11-27T10:00:00Z", 6));
    let size = fs::metadata(&log).unwrap().len();
    assert!(w.poll(T + 1_000, &[]).is_empty());
    let behind = w.behind();
    assert_eq!(behind.len(), 1);
    assert_eq!(behind[0].log, log.display().to_string());
    assert_eq!(behind[0].since_ms, Some(T + 1_000));
    let left = size - 6 - MAX_FILE_BYTES as u64;
    assert_eq!(behind[0].bytes, left, "4 MiB a poll while caught up");
    // Behind: the rest at once (it is under 64 MiB).
    let got = w.poll(T + 2_000, &[]);
    assert!(w.behind().is_empty(), "caught up");
    assert_eq!(got.len(), 4, "{got:#?}");
    let own = &got[0];
    assert_eq!(own.at_ms, T + 500, "its own time");
    let t = own.timing.unwrap();
    assert_eq!((t.read_ms, t.from), (T + 2_000, TimeFrom::Line));
    assert!(t.behind_bytes > 0 && t.behind_bytes < 1_000, "{t:?}");
    // No time of its own, or none to believe: when it was first seen on disk, saying so.
    for f in &got[1..] {
        assert_eq!(f.at_ms, T + 1_000, "{}", f.message);
        let t = f.timing.unwrap();
        assert_eq!((t.read_ms, t.from), (T + 2_000, TimeFrom::OnDisk));
    }
    // A line read as it was written keeps its reading's time, and no timing.
    append(&log, OOM);
    let now = w.poll(T + 3_000, &[]);
    assert_eq!((now[0].at_ms, now[0].timing), (T + 3_000, None));
}

#[test]
fn a_local_time_is_placed_by_the_zone_its_log_shows() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("py.log");
    append(&log, "");
    let mut w = LogWatch::new(std::slice::from_ref(&log));
    w.poll(T - 1_000, &[]);
    // Python's logging at UTC+05:30, flushed late (buffered): stamped 3 minutes before.
    append(&log, &oom_at("2026-11-27 15:27:00,250", 2));
    let got = w.poll(T + 1_000, &[]);
    assert_eq!(got[0].at_ms, T - 180_000 + 250);
    assert_eq!(got[0].timing.unwrap().from, TimeFrom::Line);
    assert_eq!(w.files[0].follower.marks.zone, Some(330));
}

#[test]
fn a_poll_stops_at_its_time_and_every_log_gets_a_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.log"), dir.path().join("b.log"));
    append(&a, "");
    append(&b, "");
    let mut w = LogWatch::new(&[a.clone(), b.clone()]);
    w.poll(1, &[]);
    append(&a, &filler(9));
    append(&b, &filler(9));
    // No time at all: a chunk of each log a poll, so a tick stays short.
    w.poll_ms = 0;
    w.poll(2, &[]);
    let behind = w.behind();
    assert_eq!(behind.len(), 2);
    let size = fs::metadata(&a).unwrap().len();
    assert!(
        behind.iter().all(|l| size - l.bytes == 64 * 1024),
        "{behind:?}"
    );
    // With time, a backlog goes 64 MiB a poll; both logs are read.
    w.poll_ms = 60_000;
    w.poll(3, &[]);
    w.poll(4, &[]);
    assert!(w.behind().is_empty(), "{:?}", w.behind());
}
