//! Long recordings: replay reads them one line at a time (a bad line is an error when it is
//! reached, with its number, and stops the replay on screen), and `.zst` recordings are written
//! by `gpumon record` and read back by `--replay` and `snapshot --replay`.

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
        failures: vec![],
        notices: vec![],
        events: Vec::new(),
        probes: vec![],
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
fn a_truncated_last_line_ends_the_replay_with_its_number() {
    let (got, err) = replay(&recording(2, "{\"at_ms\": 5, \"gpus\": [{\"uu"));
    assert_eq!(got.len(), 2);
    let err = err.expect("a cut-off line is an error").to_string();
    assert!(
        err.starts_with("r.ndjson: line 4: cut off mid-line"),
        "{err}"
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
    let input = recording::file::open(&path).unwrap();
    let mut source = ReplaySource::read("r", input).unwrap();
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
fn a_corrupt_or_cut_zst_file_is_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.ndjson.zst");
    std::fs::write(&junk, recording(3, "")).unwrap();
    for args in [&["snapshot", "--replay"][..], &["--replay"]] {
        let err = refused(args, &junk);
        assert!(
            err.contains("junk.ndjson.zst: not a valid zstd stream"),
            "{err}"
        );
    }
    // A frame cut off: the samples of the frames before it are replayed, then the cut is named.
    let mut body = frames_of(&recording(12, ""));
    body.truncate(body.len() - 3);
    let cut = dir.path().join("cut.ndjson.zst");
    std::fs::write(&cut, &body).unwrap();
    let err = refused(&["snapshot", "--replay"], &cut);
    assert!(err.contains("cut off mid-frame"), "{err}");
}

/// The recording compressed as `record` writes it: a frame every 10 lines.
fn frames_of(text: &[u8]) -> Vec<u8> {
    let mut enc = recording::zst::Encoder::new(Vec::new(), 1000);
    for line in text.split_inclusive(|b| *b == b'\n') {
        std::io::Write::write_all(&mut enc, line).unwrap();
        std::io::Write::flush(&mut enc).unwrap();
    }
    enc.finish().unwrap();
    enc.into_inner()
}
