//! Long recordings: replay reads them one line at a time (a bad line is an error when it is
//! reached, with its number, and stops the replay on screen; a recording cut off ends at its last
//! whole line, which says so), and `.zst` recordings are written by `gpumon record` and read back
//! by `--replay` and `snapshot --replay`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use assert_cmd::Command;
use gpumon::model::Event;
use gpumon::record;
use gpumon::recording::{self, Header, RecordingError, Writer};
use gpumon::sampler::{self, Factory};
use gpumon::source::replay::ReplaySource;
use gpumon::source::scripted::{ScriptedSource, build};
use gpumon::source::{Framework, Sample, Source, SourceError};

fn sample(at_ms: u64) -> Sample {
    let gpu = build::gpu(0, 100 << 30, (10 << 30) + at_ms, 1 << 30);
    let train = build::process(
        7,
        &gpu,
        (5 << 30) + at_ms,
        Framework::Pytorch,
        "python3 train.py",
    );
    Sample {
        at_ms,
        gpus: vec![gpu],
        processes: vec![train],
        ..Default::default()
    }
}

/// A recording of `n` good samples, then `tail` appended as it is.
fn recording(n: u64, tail: &str) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut w = Writer::new(&mut buf, &Header::new(build::machine(), 1000)).unwrap();
    for i in 0..n {
        w.sample(&sample(i * 1000)).unwrap();
    }
    buf.extend_from_slice(tail.as_bytes());
    buf
}

/// The samples replayed before the first fault, and the fault.
fn replay(bytes: &[u8]) -> (Vec<Sample>, Option<RecordingError>) {
    let mut source = match ReplaySource::read("r.ndjson", bytes) {
        Ok(s) => s,
        Err(e) => return (vec![], Some(e)),
    };
    let mut got = Vec::new();
    for s in source.samples() {
        match s {
            Ok(s) => got.push(s),
            Err(e) => return (got, Some(e)),
        }
    }
    (got, None)
}

fn gpumon() -> Command {
    Command::cargo_bin("gpumon").unwrap()
}

#[test]
fn a_bad_line_in_the_middle_is_reached_after_the_samples_before_it() {
    let bytes = [
        recording(3, "{\"at_ms\": \"late\"}\n"),
        recording(2, "")[1..].to_vec(),
    ]
    .concat();
    let (got, err) = replay(&bytes);
    assert_eq!(got, vec![sample(0), sample(1000), sample(2000)]);
    let err = err.expect("the bad line is an error").to_string();
    assert!(err.starts_with("r.ndjson: line 5: invalid type"), "{err}");
}

#[test]
fn a_truncated_last_line_ends_the_replay_and_the_last_whole_sample_says_so() {
    let (got, err) = replay(&recording(2, "{\"at_ms\": 5, \"gpus\": [{\"uu"));
    assert!(
        err.is_none(),
        "a cut-off line is the end, not an error: {err:?}"
    );
    assert_eq!(got.len(), 2);
    assert!(got[0].notices.is_empty());
    assert_eq!(
        got[1].notices,
        [
            "r.ndjson is cut off at line 4 (was the recording interrupted?): replayed up to the \
          last whole line before it"
        ]
    );
}

/// On screen, a cut recording ends as any replay does (never "source failing"), and the cut is
/// a notice among the alerts at the last whole sample's time.
#[tokio::test(start_paused = true)]
async fn the_screen_replays_a_cut_recording_to_its_end_and_notes_the_cut() {
    let bytes = recording(3, "{\"at_ms\": 3000, \"gp");
    let factory: Factory = Arc::new(move || {
        let source = ReplaySource::read("r.ndjson", std::io::Cursor::new(bytes.clone()))?;
        Ok(Box::new(source) as Box<dyn Source>)
    });
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Event>(4);
    let task = sampler::spawn(factory, Duration::from_secs(1), tx);
    let mut machine = gpumon::model::Machine::new(gpumon::model::Config::new(1000, 60_000));
    loop {
        let event = rx.recv().await.expect("the sampler ends the replay");
        let ended = matches!(event, Event::SourceEnded);
        assert!(!matches!(event, Event::SourceFailed { .. }), "{event:?}");
        gpumon::pipeline::apply(&mut machine, event);
        if ended {
            break;
        }
    }
    task.abort();
    assert_eq!(machine.source, gpumon::model::SourceState::Ended);
    let notice = machine
        .alerts
        .iter()
        .find(|a| a.level == gpumon::model::Level::Notice)
        .expect("the cut is a notice");
    assert_eq!(notice.at_ms, 2000);
    assert!(
        notice.title.contains("cut off at line 5"),
        "{}",
        notice.title
    );
}

#[test]
fn an_empty_file_is_refused_and_a_header_alone_replays_nothing() {
    let (got, err) = replay(b"");
    assert!(got.is_empty());
    assert!(matches!(err, Some(RecordingError::Empty { .. })), "{err:?}");
    let (got, err) = replay(&recording(0, ""));
    assert!(got.is_empty() && err.is_none(), "{err:?}");
}

/// On screen, a bad line mid-replay is a source failure naming the file and line, after the
/// samples before it; it is told again, never skipped over.
#[tokio::test(start_paused = true)]
async fn the_sampler_reports_a_bad_line_as_the_replays_failure() {
    let bytes = recording(2, "not json\n");
    let factory: Factory = Arc::new(move || {
        let source = ReplaySource::read("r.ndjson", std::io::Cursor::new(bytes.clone()))?;
        Ok(Box::new(source) as Box<dyn Source>)
    });
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Event>(4);
    let task = sampler::spawn(factory, Duration::from_secs(1), tx);
    let mut samples = 0;
    let mut failures = Vec::new();
    while failures.len() < 2 {
        match rx.recv().await.expect("the sampler goes on") {
            Event::Sample(_) => samples += 1,
            Event::SourceFailed { reason, .. } => failures.push(reason),
            _ => {}
        }
    }
    task.abort();
    assert_eq!(samples, 2);
    for reason in failures {
        assert!(
            reason.starts_with("replay stopped: r.ndjson: line 4: expected"),
            "{reason}"
        );
    }
}

#[test]
fn a_stopped_replay_stays_stopped() {
    let bytes = recording(1, "[1]\n");
    let mut source = ReplaySource::read("r.ndjson", bytes.as_slice()).unwrap();
    assert!(source.sample().is_ok());
    for _ in 0..2 {
        let Err(SourceError::Unavailable(reason)) = source.sample() else {
            panic!("the bad line stops the replay");
        };
        assert!(reason.contains("line 3"), "{reason}");
    }
}

fn scripted(n: u64) -> Factory {
    Arc::new(move || {
        let script: Vec<_> = (0..n).map(|i| Ok(sample(i * 1000))).collect();
        Ok(Box::new(ScriptedSource::new(build::machine(), script)) as Box<dyn Source>)
    })
}

#[tokio::test(start_paused = true)]
async fn a_zst_recording_round_trips_through_record_and_replay() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ndjson.zst");
    let pending = std::future::pending::<i32>();
    // 25 samples a second apart: frames of 10 lines, the last one partial.
    let done = record::record(
        scripted(25),
        &path,
        Duration::from_secs(1),
        None,
        None,
        pending,
    )
    .await;
    assert_eq!(done.unwrap().samples, 25);
    let raw = std::fs::read(&path).unwrap();
    assert_eq!(raw[..4], [0x28, 0xb5, 0x2f, 0xfd], "a zstd file");
    let input = gpumon::infile::Input::open(&path).unwrap();
    let mut source = ReplaySource::read("r", input.reader()).unwrap();
    let got: Vec<_> = source.samples().map(Result::unwrap).collect();
    assert_eq!(got, (0..25).map(|i| sample(i * 1000)).collect::<Vec<_>>());

    let out = gpumon()
        .args(["snapshot", "--format", "text", "--replay"])
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("python3 train.py"), "{text}");
}

fn refused(args: &[&str], path: &Path) -> String {
    let out = gpumon().args(args).arg(path).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(
        !err.contains("panicked") && err.lines().count() == 1,
        "{err}"
    );
    err
}

#[test]
fn a_corrupt_zst_file_is_one_clear_line_and_a_cut_one_replays_to_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    // zstd's magic, then junk: damaged from its first frame.
    let junk = dir.path().join("junk.ndjson.zst");
    std::fs::write(
        &junk,
        [&[0x28, 0xb5, 0x2f, 0xfd][..], &recording(3, "")].concat(),
    )
    .unwrap();
    for args in [&["snapshot", "--replay"][..], &["--replay"]] {
        let err = refused(args, &junk);
        assert!(
            err.contains("junk.ndjson.zst: not a valid zstd stream"),
            "{err}"
        );
    }
    // A name is not a format: plain NDJSON named .zst reads as what it is.
    let plain = dir.path().join("plain.ndjson.zst");
    std::fs::write(&plain, recording(3, "")).unwrap();
    let out = gpumon()
        .args(["snapshot", "--replay"])
        .arg(&plain)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A frame cut off inside its block: the samples of the frames before it are replayed, the
    // cut is named, and the snapshot is the last whole sample's.
    let whole = recording(12, "");
    let lines: Vec<&[u8]> = whole.split_inclusive(|b| *b == b'\n').collect();
    let mut body = frames_of(&lines[..10].concat());
    let last = frames_of(&lines[10..].concat());
    body.extend_from_slice(&last[..last.len() / 2]);
    let cut = dir.path().join("cut.ndjson.zst");
    std::fs::write(&cut, &body).unwrap();
    let out = gpumon()
        .args(["snapshot", "--replay"])
        .arg(&cut)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("cut.ndjson.zst is cut off at line 11"),
        "{err}"
    );
    let snap: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(snap["taken_at"], gpumon::snapshot::time_ms(8000));
}

/// The recording compressed as `record` writes it: a frame every 5 lines.
fn frames_of(text: &[u8]) -> Vec<u8> {
    let mut enc = recording::zst::Encoder::new(Vec::new(), 1000);
    for line in text.split_inclusive(|b| *b == b'\n') {
        std::io::Write::write_all(&mut enc, line).unwrap();
        std::io::Write::flush(&mut enc).unwrap();
    }
    enc.finish().unwrap();
    enc.into_inner()
}
