//! Bounds from a file's growth, and a line's own time believed only within them: zones named or
//! inferred, years supplied, times in the future or older than the log can explain refused.

use super::*;
use crate::oom::stamp::read;

/// 2026-11-27T10:00:00Z.
const T: u64 = 1_795_773_600_000;

fn bounds(s: Seen) -> (Option<u64>, Option<u64>) {
    (s.after_ms, s.by_ms)
}

#[test]
fn a_line_is_bounded_by_the_looks_around_it() {
    let mut m = Marks::default();
    m.look(100, 1_000);
    m.look(100, 2_000);
    m.look(300, 3_000);
    m.look(700, 4_000);
    // Bytes 100..300 came between the looks at 2 s and 3 s.
    assert_eq!(bounds(m.seen(100, 300)), (Some(2_000), Some(3_000)));
    // A line from 250 to 400 began before the look at 3 s and ended by the one at 4 s.
    assert_eq!(bounds(m.seen(250, 400)), (Some(2_000), Some(4_000)));
    assert_eq!(m.seen(700, 800).by_ms, None, "not on disk at any look");
    assert_eq!(m.seen(100, 300).behind, 400, "the file held 400 bytes more");
    assert_eq!(m.waiting_since(100), Some(3_000));
    assert_eq!(m.waiting_since(700), None);
    m.forget(300);
    assert_eq!(m.seen(300, 700).after_ms, Some(3_000));
    assert_eq!(m.seen(300, 700).by_ms, Some(4_000));
    assert_eq!(m.len(), Some(700));
    // Read again from its start: what it holds came after the last look.
    m.restart(Some(4_000));
    m.look(50, 5_000);
    assert_eq!(bounds(m.seen(0, 50)), (Some(4_000), Some(5_000)));
}

#[test]
fn thinned_looks_widen_the_bounds_and_never_break_them() {
    let mut m = Marks::default();
    for i in 0..4 * MAX_MARKS as u64 {
        m.look(i * 10, i * 1_000);
    }
    assert!(m.marks.len() <= MAX_MARKS);
    for start in (0..4 * MAX_MARKS as u64 * 10).step_by(997) {
        let s = m.seen(start, start + 10);
        let truth = (start / 10) * 1_000;
        assert!(
            s.after_ms.is_none_or(|a| a < truth + 1_000),
            "{start}: {s:?}"
        );
        assert!(s.by_ms.is_none_or(|b| b >= truth), "{start}: {s:?}");
    }
}

fn at(line: &str, after: Option<u64>, by: u64, zone: Option<i32>) -> Option<(u64, Option<i32>)> {
    resolve(&read(line).unwrap(), after, by, zone)
}

#[test]
fn a_time_with_its_zone_is_believed_within_the_bounds() {
    let by = T + 1_000;
    assert_eq!(
        at("2026-11-27T10:00:00.250Z x", Some(T - 1_000), by, None),
        Some((T + 250, None))
    );
    assert_eq!(
        at("2026-11-27T11:00:00+01:00 x", Some(T - 1_000), by, None),
        Some((T, None))
    );
    // Buffered: stamped 9 minutes before it reached the disk.
    assert_eq!(
        at("2026-11-27T09:51:00Z x", Some(T - 1_000), by, None),
        Some((T - 9 * 60_000, None))
    );
    // A line that reached the disk 73 s before it was read keeps its own time.
    assert_eq!(
        at("2026-11-27T10:00:00Z x", Some(T - 1_000), T + 1_000, None).map(|t| t.0),
        Some(T)
    );
}

#[test]
fn times_in_the_future_or_too_old_are_data() {
    let (after, by) = (Some(T - 1_000), T + 1_000);
    for line in [
        "2026-11-27T10:00:05Z in the future",
        "2026-11-27T11:00:00Z an hour ahead",
        "2026-11-27T09:40:00Z older than the log can explain",
        "1999-01-01T00:00:00Z",
        "2126-11-27T10:00:00Z",
    ] {
        assert_eq!(at(line, after, by, None), None, "{line}");
    }
    // Two seconds of slack for a clock a little ahead: timed at the look.
    assert_eq!(
        at("2026-11-27T10:00:02Z x", after, by, None),
        Some((by, None))
    );
}

#[test]
fn a_local_time_finds_its_zone_alone_or_by_the_log() {
    let (after, by) = (Some(T - 1_000), T + 1_000);
    // Python's logging in UTC+01:00, India's +05:30 and New York's -05:00.
    assert_eq!(
        at("2026-11-27 11:00:00,500 - ERROR", after, by, None),
        Some((T + 500, Some(60)))
    );
    assert_eq!(
        at("[2026-11-27 15:30:00] x", after, by, None),
        Some((T, Some(330)))
    );
    assert_eq!(
        at("2026-11-27 05:00:00,000 x", after, by, None),
        Some((T, Some(-300)))
    );
    // Bounds wider than 15 minutes fit several zones: only the log's own settles it.
    let wide = Some(T - 3 * 3_600_000);
    assert_eq!(at("2026-11-27 10:30:00 x", wide, by, None), None);
    assert_eq!(
        at("2026-11-27 10:30:00 x", wide, by, Some(60)),
        Some((T - 30 * 60_000, Some(60)))
    );
    // A minute off every zone: no zone puts it within a 2-second window.
    assert_eq!(at("2026-11-27 10:07:30 x", after, by, None), None);
}

#[test]
fn glog_and_syslog_take_their_year_from_the_clock() {
    let (after, by) = (Some(T - 1_000), T + 1_000);
    assert_eq!(
        at("E1127 10:00:00.123456 42 x.cc:1] boom", after, by, None),
        Some((T + 123, Some(0)))
    );
    assert_eq!(
        at("Nov 27 02:00:00 gpu-07 python[4]: x", after, by, None),
        Some((T, Some(-480)))
    );
    // Written on Dec 31 in New York, read just after midnight UTC on Jan 1.
    let new_year = read("2027-01-01T00:00:00Z").unwrap().as_utc(2027).unwrap() as u64;
    assert_eq!(
        at(
            "I1231 19:00:00.000000 1 x.cc:1] x",
            Some(new_year - 1_000),
            new_year + 1_000,
            None
        ),
        Some((new_year, Some(-300)))
    );
}
