//! Broken recordings through `recording::Reader` (via `ReplaySource`, read to its end) and the
//! CLI.

use std::io::{BufRead, BufReader, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use gpumon::recording::{MAX_LINE, RecordingError};
use gpumon::source::replay::{ReplaySource, demo};

use super::{TWO_GIB, fails_with, file, gpumon, sparse};

/// Replays the whole recording line by line, as `snapshot --replay` does: how many samples, or
/// the first fault.
fn replay_all(name: &str, input: impl BufRead) -> Result<usize, RecordingError> {
    let mut source = ReplaySource::read(name, input)?;
    source.samples().try_fold(0, |n, s| s.map(|_| n + 1))
}

fn header() -> Vec<u8> {
    let line = demo().split(|b| *b == b'\n').next().unwrap();
    [line, b"\n"].concat()
}

fn gpu_with_memory(total: &str) -> String {
    format!(
        r#"{{"at_ms": 1, "gpus": [{{"uuid": "u", "index": 0, "name": "n", "pci_bus_id": null, "status": {{"state": "ok"}}, "memory": {{"total": {total}, "used": 0, "free": 0, "reserved": null}}, "utilization": null, "temperature_c": null, "power_mw": null}}], "processes": []}}"#
    )
}

/// The demo's header declaring another interval.
fn interval(ms: &str) -> Vec<u8> {
    let h = String::from_utf8(header()).unwrap();
    assert!(h.contains("\"interval_ms\":1000"));
    h.replacen("\"interval_ms\":1000", &format!("\"interval_ms\":{ms}"), 1)
        .into_bytes()
}

/// (file name, contents, what the one-line error says after "NAME: ").
fn cases() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let h = header();
    let with = |line: &str| [h.clone(), line.as_bytes().to_vec(), b"\n".to_vec()].concat();
    vec![
        ("empty.ndjson", vec![], "empty file"),
        ("blank.ndjson", b"\n\n  \n".to_vec(), "empty file"),
        (
            "truncated.ndjson",
            h[..h.len() / 2].to_vec(),
            "line 1: cut off mid-line (was the recording interrupted?): not even its header",
        ),
        (
            "version.ndjson",
            br#"{"schema": "gpumon.recording/9"}"#.to_vec(),
            "line 1: schema \"gpumon.recording/9\" is not supported",
        ),
        (
            "foreign.ndjson",
            b"{\"hello\": 1}\n".to_vec(),
            "line 1: no \"schema\"",
        ),
        (
            "interval.ndjson",
            interval(&u64::MAX.to_string()),
            "line 1: interval_ms 18446744073709551615 is out of range",
        ),
        (
            "zero_interval.ndjson",
            interval("0"),
            "line 1: interval_ms 0 is out of range",
        ),
        (
            "array.ndjson",
            b"[1, 2]\n".to_vec(),
            "line 1: no \"schema\"",
        ),
        (
            "types.ndjson",
            with(r#"{"at_ms": "soon", "gpus": [], "processes": []}"#),
            "line 2: invalid type: string \"soon\", expected u64 (column",
        ),
        (
            "escape.ndjson",
            with(r#"{"at_ms": "a\nb\u001b[2J"}"#),
            r#"line 2: invalid type: string "a\nb\u{1b}[2J""#,
        ),
        (
            "header_types.ndjson",
            br#"{"schema": "gpumon.recording/1", "interval_ms": []}"#.to_vec(),
            "line 1: invalid type: sequence, expected u64",
        ),
        (
            "nan.ndjson",
            with(&gpu_with_memory("NaN")),
            "line 2: expected value (column",
        ),
        (
            "negative.ndjson",
            with(&gpu_with_memory("-5")),
            "line 2: invalid value: integer `-5`, expected u64 (column",
        ),
        (
            "float.ndjson",
            with(&gpu_with_memory("1e300")),
            "line 2: invalid type: floating point",
        ),
        (
            "utf8.ndjson",
            [
                h.clone(),
                b"{\"at_ms\": 1, \"gpus\": [], \"x\": \"\xff\xfe\"}\n".to_vec(),
            ]
            .concat(),
            "line 2: not UTF-8 text",
        ),
        (
            "bom.ndjson",
            [b"\xef\xbb\xbf".to_vec(), h.clone()].concat(),
            "line 1: expected value (column 1)",
        ),
    ]
}

#[test]
fn the_reader_names_the_file_and_line_of_each_fault() {
    for (name, bytes, expect) in cases() {
        let Err(e) = replay_all(name, bytes.as_slice()) else {
            panic!("{name} was accepted");
        };
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("{name}: {expect}")),
            "{name}: {text}"
        );
        assert!(
            !text.contains('\n') && !text.contains("at line"),
            "{name}: {text}"
        );
    }
}

/// A recording cut off after its header: nothing replayed, the cut said in one line, status 0
/// (the normal state of a recording whose writer was killed).
#[test]
fn a_recording_cut_in_its_first_sample_is_said_and_not_refused() {
    let dir = tempfile::tempdir().unwrap();
    let body = [header(), br#"{"at_ms": 1, "gpus": [{"uuid""#.to_vec()].concat();
    let path = file(dir.path(), "cut.ndjson", &body);
    let out = super::gpumon()
        .args(["snapshot", "--replay", &path])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        err.trim(),
        format!(
            "gpumon: {path} is cut off at line 2 (was the recording interrupted?): replayed up \
             to the last whole line before it"
        )
    );
}

#[test]
fn the_cli_refuses_each_with_one_line_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes, expect) in cases() {
        let path = file(dir.path(), name, &bytes);
        for args in [vec!["--replay", &path], vec!["snapshot", "--replay", &path]] {
            let err = fails_with(2, &args);
            assert!(
                err.contains(&format!("{path}: {expect}")),
                "{args:?}: {err}"
            );
        }
    }
}

/// Yields `len` bytes of `x` without holding them, counting what was read.
struct Endless {
    left: u64,
    pulled: Arc<AtomicU64>,
}

impl Read for Endless {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        buf[..n].fill(b'x');
        self.left -= n as u64;
        self.pulled.fetch_add(n as u64, Ordering::SeqCst);
        Ok(n)
    }
}

#[test]
fn a_2_gib_line_is_refused_after_reading_a_bounded_part_of_it() {
    let pulled = Arc::new(AtomicU64::new(0));
    let line = Endless {
        left: TWO_GIB,
        pulled: Arc::clone(&pulled),
    };
    let head = header();
    let input = BufReader::new(head.as_slice().chain(line));
    let Err(e) = replay_all("huge.ndjson", input) else {
        panic!("a 2 GiB line was accepted");
    };
    assert_eq!(
        e.to_string(),
        "huge.ndjson: line 2: line longer than 16 MiB"
    );
    let read = pulled.load(Ordering::SeqCst);
    assert!(
        read <= MAX_LINE as u64 + (64 << 10),
        "read {read} bytes of it"
    );

    let dir = tempfile::tempdir().unwrap();
    let path = sparse(dir.path(), "huge.ndjson", &header(), TWO_GIB);
    let err = fails_with(2, &["snapshot", "--replay", &path]);
    assert!(
        err.contains(&format!("{path}: line 2: line longer than 16 MiB")),
        "{err}"
    );
}

/// Typed but absurd numbers (sizes at u64::MAX, used beyond total, time running backwards)
/// are replayed without panicking (debug builds check every overflow).
#[test]
fn absurd_numbers_replay_without_a_panic() {
    let max = u64::MAX;
    let gpu = |at: u64, total: u64, used: u64| {
        format!(
            r#"{{"at_ms": {at}, "gpus": [{{"uuid": "u", "index": 0, "name": "n", "pci_bus_id": null, "status": {{"state": "ok"}}, "memory": {{"total": {total}, "used": {used}, "free": {max}, "reserved": {max}}}, "utilization": {max32}, "temperature_c": 0, "power_mw": {max32}}}], "processes": [{p1}, {p2}]}}"#,
            max32 = u32::MAX,
            p1 = proc(1, max),
            p2 = proc(2, max - 1),
        )
    };
    // Time runs from 0 to u64::MAX, backwards in between.
    let lines = [
        gpu(0, 0, max),
        gpu(max, max, max),
        gpu(1000, 1, 0),
        gpu(max, max, 1),
    ];
    let dir = tempfile::tempdir().unwrap();
    let body = [header(), lines.join("\n").into_bytes(), b"\n".to_vec()].concat();
    let path = file(dir.path(), "absurd.ndjson", &body);
    for format in ["json", "text"] {
        let out = gpumon()
            .args(["snapshot", "--replay", &path, "--format", format])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{format}: {err}");
    }
    // The screen sizes its history from the recording's span before it needs a terminal.
    let err = super::fails_with(2, &["--replay", &path]);
    assert!(err.contains("not a terminal"), "{err}");
}

fn proc(pid: u32, bytes: u64) -> String {
    format!(
        r#"{{"pid": {pid}, "gpu_uuid": "u", "kind": "compute", "device_memory": {bytes}, "start_time": {max}, "user": null, "command": null, "vms": {max}, "rss": {max}, "framework": null, "settings": null}}"#,
        max = u64::MAX
    )
}
