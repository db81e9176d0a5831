//! The probe reader on a process's end record and its main thread's place: parsed and bounded,
//! refused when malformed, told once, and read from the last file of a process that has gone.

use std::fs;

use super::dir::ProbeDirs;
use super::file::{MAX_BYTES, parse};
use super::tests::{my_uid, proc_with};
use super::*;
use crate::sample::WhereNews;
use crate::sample::process_end::EndHow;

const NOW: u64 = 1_763_800_100_000;

fn doc(pid: u32, at_ms: u64, extra: &str) -> String {
    format!(
        r#"{{"schema":"gpumon.probe/1","pid":{pid},"start_time":{start},"at_ms":{at_ms},"interval_ms":1000,
        "python":"3.12.3","stopped":null,"frameworks":[]{extra}}}"#,
        start = 1_763_800_000 + u64::from(pid)
    )
}

const OOM_END: &str = r#","end":{"how":"exception","code":1,"exception":{"type":"torch.OutOfMemoryError","message":"CUDA out of memory. Tried to allocate 2.00 GiB"},"at_ms":1763800100500}"#;

fn stuck(since_ms: u64, at_ms: u64) -> String {
    format!(
        r#","where":{{"frames":[{{"file":"/w/data/loader.py","line":88,"function":"next_batch"}},
        {{"file":"/w/train.py","line":12,"function":"<module>"}}],"since_ms":{since_ms},"at_ms":{at_ms},"asked":false}}"#
    )
}

#[test]
fn an_end_and_a_place_parse_and_bad_ones_refuse_the_file() {
    let r = parse(
        doc(873, NOW, &format!("{OOM_END}{}", stuck(NOW - 41_000, NOW))).as_bytes(),
        873,
    )
    .unwrap();
    let end = r.end.unwrap();
    assert_eq!((end.how, end.code), (EndHow::Exception, Some(1)));
    assert_eq!(end.exception.unwrap().kind, "torch.OutOfMemoryError");
    let w = r.main_where.unwrap();
    assert_eq!(w.label().as_deref(), Some("data/loader.py:88 next_batch"));
    assert_eq!(w.still_ms(), 41_000);
    let plain = parse(doc(873, NOW, r#","end":null,"where":null"#).as_bytes(), 873).unwrap();
    assert_eq!((plain.end, plain.main_where), (None, None));
    // A message as long as a file may be is cut; control characters arrive escaped.
    let huge = format!(
        r#","end":{{"how":"exception","code":1,"exception":{{"type":"E\u001b]0;x\u0007","message":"{}"}},"at_ms":1}}"#,
        "m".repeat(60_000)
    );
    let r = parse(doc(873, NOW, &huge).as_bytes(), 873).unwrap();
    let e = r.end.unwrap().exception.unwrap();
    assert_eq!(e.kind, "E\\u{1b}]0;x\\u{7}");
    assert_eq!(e.message.len(), crate::sample::process_end::MAX_MESSAGE);
    for bad in [
        r#","end":{"how":"signal","code":null,"exception":null,"at_ms":1}"#,
        r#","end":{"how":"exit","code":3.5,"exception":null,"at_ms":1}"#,
        r#","end":"exit""#,
        r#","where":{"frames":[{"file":7,"line":1,"function":"f"}],"since_ms":1,"at_ms":2,"asked":false}"#,
        r#","where":{"frames":[],"since_ms":null,"at_ms":2,"asked":false}"#,
    ] {
        let err = parse(doc(873, NOW, bad).as_bytes(), 873).unwrap_err();
        assert!(err.starts_with("malformed"), "{bad}: {err}");
        assert!(!err.chars().any(char::is_control), "{err:?}");
    }
    let too_big = doc(
        873,
        NOW,
        &huge.replace(&"m".repeat(60_000), &"m".repeat(70_000)),
    );
    assert!(too_big.len() as u64 > MAX_BYTES);
    let err = parse(too_big.as_bytes(), 873).unwrap_err();
    assert!(err.contains("oversized"), "{err}");
}

/// The end of a process that has gone is read from its last file once, told as news for its
/// pid and start time, and the file removed; an end already read while the process still ran
/// is not told again.
#[test]
fn the_end_of_a_process_that_has_gone_is_told_once() {
    let probe = tempfile::tempdir().unwrap();
    let proc_root = tempfile::tempdir().unwrap();
    let dir = probe.path();
    for pid in [400, 401, 402] {
        proc_with(proc_root.path(), pid, my_uid());
        fs::write(dir.join(format!("{pid}.json")), doc(pid, NOW, "")).unwrap();
    }
    let mut reader = ProbeDirs::new(vec![dir.to_path_buf()], false, my_uid())
        .with_proc_root(proc_root.path().into());
    let first = reader.scan(NOW);
    assert!(first.news.iter().all(|n| n.end.is_none()));
    // 400 raised an OOM and has gone; 401 wrote its end while still running; 402 was killed
    // (its last file has no end).
    fs::write(dir.join("400.json"), doc(400, NOW + 500, OOM_END)).unwrap();
    fs::remove_dir_all(proc_root.path().join("400")).unwrap();
    fs::write(dir.join("401.json"), doc(401, NOW + 500, OOM_END)).unwrap();
    fs::remove_dir_all(proc_root.path().join("402")).unwrap();
    let second = reader.scan(NOW + 1000);
    let ends: Vec<(u32, u64)> = second
        .news
        .iter()
        .filter(|n| n.end.is_some())
        .map(|n| (n.pid, n.start_time))
        .collect();
    assert_eq!(ends, vec![(400, 1_763_800_400), (401, 1_763_800_401)]);
    assert!(
        !second.reports.contains_key(&400),
        "an ended process has no figures"
    );
    assert!(!dir.join("400.json").exists() && !dir.join("402.json").exists());
    assert!(second.notices.is_empty(), "{:?}", second.notices);
    fs::remove_dir_all(proc_root.path().join("401")).unwrap();
    let third = reader.scan(NOW + 2000);
    assert!(
        third.news.iter().all(|n| n.end.is_none()),
        "{:?}",
        third.news
    );
    assert!(!dir.join("401.json").exists());
    assert!(reader.scan(NOW + 3000).news.is_empty());
}

/// A file of a pid never seen running, then gone, tells no end: nothing vouches that it was the
/// process's own.
#[test]
fn an_end_in_a_file_never_seen_running_is_not_told() {
    let probe = tempfile::tempdir().unwrap();
    let proc_root = tempfile::tempdir().unwrap();
    fs::write(probe.path().join("500.json"), doc(500, NOW, OOM_END)).unwrap();
    let mut reader = ProbeDirs::new(vec![probe.path().to_path_buf()], false, my_uid())
        .with_proc_root(proc_root.path().into());
    assert!(reader.scan(NOW).news.is_empty());
    assert!(!probe.path().join("500.json").exists());
}

/// A place is told when the main thread arrives there (not every tick it stays), and that it
/// moved when the probe no longer reports it.
#[test]
fn a_place_is_told_when_it_changes_and_when_it_clears() {
    let probe = tempfile::tempdir().unwrap();
    let proc_root = tempfile::tempdir().unwrap();
    let dir = probe.path();
    proc_with(proc_root.path(), 600, my_uid());
    let write =
        |at: u64, extra: &str| fs::write(dir.join("600.json"), doc(600, at, extra)).unwrap();
    let mut reader = ProbeDirs::new(vec![dir.to_path_buf()], false, my_uid())
        .with_proc_root(proc_root.path().into());
    write(NOW, "");
    reader.scan(NOW);
    write(NOW + 1000, &stuck(NOW - 9000, NOW + 1000));
    let at: Vec<_> = reader
        .scan(NOW + 1000)
        .news
        .into_iter()
        .filter_map(|n| n.main_where)
        .collect();
    assert!(
        matches!(&at[..], [WhereNews::At(w)] if w.still_ms() == 10_000),
        "{at:?}"
    );
    write(NOW + 2000, &stuck(NOW - 9000, NOW + 2000));
    assert!(
        reader.scan(NOW + 2000).news.is_empty(),
        "still there: nothing new"
    );
    write(NOW + 3000, "");
    let moved: Vec<_> = reader
        .scan(NOW + 3000)
        .news
        .into_iter()
        .filter_map(|n| n.main_where)
        .collect();
    assert_eq!(moved, vec![WhereNews::Moved { at_ms: NOW + 3000 }]);
    write(NOW + 4000, "");
    assert!(reader.scan(NOW + 4000).news.is_empty());
}

/// A process that stood still and was killed keeps its place (its last file still has it); one
/// that stood still and then ended through Python moved: its last file says so.
#[test]
fn a_gone_process_keeps_its_place_only_when_its_last_file_has_it() {
    let probe = tempfile::tempdir().unwrap();
    let proc_root = tempfile::tempdir().unwrap();
    let dir = probe.path();
    for pid in [700, 701] {
        proc_with(proc_root.path(), pid, my_uid());
        fs::write(
            dir.join(format!("{pid}.json")),
            doc(pid, NOW, &stuck(NOW - 20_000, NOW)),
        )
        .unwrap();
    }
    let mut reader = ProbeDirs::new(vec![dir.to_path_buf()], false, my_uid())
        .with_proc_root(proc_root.path().into());
    assert_eq!(reader.scan(NOW).news.len(), 2);
    // 700 is killed where it stood; 701 raised, and its last file has no place.
    fs::write(
        dir.join("700.json"),
        doc(700, NOW + 1000, &stuck(NOW - 20_000, NOW + 1000)),
    )
    .unwrap();
    fs::write(dir.join("701.json"), doc(701, NOW + 1000, OOM_END)).unwrap();
    for pid in [700, 701] {
        fs::remove_dir_all(proc_root.path().join(pid.to_string())).unwrap();
    }
    let news = reader.scan(NOW + 1000).news;
    assert_eq!(news.len(), 1, "{news:?}");
    assert_eq!(news[0].pid, 701);
    assert!(news[0].end.is_some());
    assert_eq!(
        news[0].main_where,
        Some(WhereNews::Moved { at_ms: NOW + 1000 })
    );
}
