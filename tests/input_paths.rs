//! Every input path gpumon is given reads alike (issue 35): a pipe, `/dev/stdin`, `<(…)`, a named
//! FIFO and `-` read as the file does; gzip and zstd logs are decompressed; a binary file and a
//! file of the wrong kind are refused in words; a recording cut off is replayed up to its cut by
//! `explain`, `snapshot --replay` and `diff`; a missing file among good ones is named while the
//! good ones are reported.

use std::io::Write;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use assert_cmd::Command;

const LOG: &str = "tests/fixtures/logs/cupy-pool-limit.log";
const LOG2: &str = "tests/fixtures/logs/torch-fill-frag.log";
const DEMO: &str = "assets/demo.ndjson";
const SNAPSHOT: &str = "tests/fixtures/snapshots/h100-jax-prealloc.json";

/// No command here may wait longer than this (a FIFO that blocked forever would).
const BOUND: Duration = Duration::from_secs(60);

fn gpumon() -> Command {
    let mut c = Command::cargo_bin("gpumon").unwrap();
    c.env("GPUMON_NVML_LIB", "/nonexistent/libnvidia-ml.so.1")
        .timeout(BOUND);
    c
}

fn text(out: &Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn run(args: &[&str]) -> (i32, String, String) {
    text(&gpumon().args(args).output().unwrap())
}

/// `args` with `stdin` piped in.
fn piped(args: &[&str], stdin: Vec<u8>) -> (i32, String, String) {
    text(&gpumon().args(args).write_stdin(stdin).output().unwrap())
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path.to_str().unwrap().to_string()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// Compressed as `gpumon record` writes it: a frame every 5 lines (5 s of 1 s samples).
fn zstd(bytes: &[u8]) -> Vec<u8> {
    let mut enc = gpumon::recording::zst::Encoder::new(Vec::new(), 1000);
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        enc.write_all(line).unwrap();
        enc.flush().unwrap();
    }
    enc.finish().unwrap();
    enc.into_inner()
}

/// The failures of `explain --format json`'s report, without the files' names.
fn failures(out: &str) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(out).unwrap();
    let mut all = v["failures"].take();
    for f in all.as_array_mut().unwrap() {
        f.as_object_mut().unwrap().remove("log");
    }
    all
}

/// What `explain LOG` finds in the CuPy log, read by path: its one failure.
fn by_path() -> serde_json::Value {
    let (code, out, err) = run(&["explain", LOG, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let found = failures(&out);
    assert_eq!(found[0]["source"], "cupy", "{out}");
    assert_eq!(found.as_array().unwrap().len(), 1, "{out}");
    found
}

#[test]
fn a_pipe_dev_stdin_dash_and_process_substitution_read_as_the_file_does() {
    let want = by_path();
    let log = std::fs::read(LOG).unwrap();
    for arg in ["-", "/dev/stdin"] {
        let (code, out, err) = piped(&["explain", arg, "--format", "json"], log.clone());
        assert_eq!(code, 0, "{arg}: {err}");
        assert_eq!(failures(&out), want, "{arg}");
    }
    // `<(cat LOG)`: bash hands gpumon a /dev/fd path to a pipe.
    let bin = env!("CARGO_BIN_EXE_gpumon");
    let out = std::process::Command::new("bash")
        .args(["-c", &format!("'{bin}' explain <(cat {LOG})")])
        .env("GPUMON_NVML_LIB", "/nonexistent/libnvidia-ml.so.1")
        .output()
        .unwrap();
    let (code, out, err) = text(&out);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("CuPy") && out.ends_with("1 allocation failure(s)\n"),
        "{out}"
    );
    // A recording through a pipe, to the screen's snapshot and to diff.
    let demo = std::fs::read(DEMO).unwrap();
    let (code, out, err) = piped(&["snapshot", "--replay", "-"], demo.clone());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"gpumon.snapshot/4\""), "{out}");
    let (code, out, err) = piped(&["diff", "-", DEMO], demo);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("No differences that matter"), "{out}");
}

#[test]
fn a_named_fifo_is_read_once_without_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("log.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let writer = {
        let fifo = fifo.clone();
        // Blocks until gpumon opens the FIFO for reading; left behind if gpumon never does.
        std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
            f.write_all(&std::fs::read(LOG).unwrap()).unwrap();
        })
    };
    let (code, out, err) = run(&["explain", fifo.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("CuPy") && out.ends_with("1 allocation failure(s)\n"),
        "{out}"
    );
    writer.join().unwrap();
}

#[test]
fn gzip_and_zstd_logs_are_read_whatever_their_names() {
    let want = by_path();
    let dir = tempfile::tempdir().unwrap();
    let log = std::fs::read(LOG).unwrap();
    for (name, bytes) in [
        ("train.log.gz", gzip(&log)),
        ("train.log.zst", zstd(&log)),
        ("rotated.1", gzip(&log)),
    ] {
        let path = write(dir.path(), name, &bytes);
        let (code, out, err) = run(&["explain", &path, "--format", "json"]);
        assert_eq!(code, 0, "{name}: {err}");
        assert_eq!(failures(&out), want, "{name}");
    }
    // `<(zcat train.log.gz)`'s job, done by gpumon from a pipe.
    let (code, out, _) = piped(&["explain", "-"], gzip(&log));
    assert_eq!(code, 0);
    assert!(out.ends_with("1 allocation failure(s)\n"), "{out}");
    // A compressed recording, whatever its name.
    let demo = std::fs::read(DEMO).unwrap();
    let samples = demo.iter().filter(|b| **b == b'\n').count() - 1;
    let rec = write(dir.path(), "demo.ndjson.gz", &gzip(&demo));
    let (code, out, err) = run(&["explain", &rec]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!("gpumon recording, {samples} sample(s)")),
        "{out}"
    );
}

#[test]
fn a_binary_file_is_refused_with_its_reason() {
    let bin = env!("CARGO_BIN_EXE_gpumon");
    let (code, out, err) = run(&["explain", bin]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.is_empty(),
        "no failures read from a binary's strings: {out}"
    );
    // How much of an ELF's first block is not text depends on the build; its NULs are not why.
    let why = err
        .trim()
        .strip_prefix(&format!("gpumon: {bin}: this is a binary file ("))
        .and_then(|e| {
            e.strip_suffix(
                "% of its first 8192 bytes are not text), not a log or a gpumon recording",
            )
        });
    assert!(
        why.is_some_and(|p| p.trim().parse::<u32>().is_ok_and(|p| p > 30)),
        "{err}"
    );
    for args in [
        vec!["snapshot", "--replay", bin],
        vec!["--replay", bin],
        vec!["diff", bin, SNAPSHOT],
    ] {
        let (code, _, err) = run(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains("this is a binary file (") && err.contains("are not text"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn the_wrong_kind_of_file_says_what_it_is_and_what_reads_it() {
    let cases: [(&[&str], String); 5] = [
        (
            &["snapshot", "--replay", LOG],
            format!(
                "{LOG}: this is a text log, not a gpumon recording: try `gpumon explain {LOG}`"
            ),
        ),
        (
            &["--replay", LOG],
            format!(
                "{LOG}: this is a text log, not a gpumon recording: try `gpumon explain {LOG}`"
            ),
        ),
        (
            &["snapshot", "--replay", SNAPSHOT],
            format!(
                "{SNAPSHOT}: this is a gpumon snapshot, not a gpumon recording: `gpumon diff` \
                 compares it with another snapshot or a recording"
            ),
        ),
        (
            &["diff", SNAPSHOT, LOG],
            format!(
                "{LOG}: this is a text log, not a gpumon snapshot or recording: try `gpumon \
                 explain {LOG}`"
            ),
        ),
        (
            &["explain", SNAPSHOT],
            format!(
                "{SNAPSHOT}: this is a gpumon snapshot, not a log or a gpumon recording: `gpumon \
                 diff` compares it with another snapshot or a recording"
            ),
        ),
    ];
    for (args, says) in cases {
        let (code, _, err) = run(args);
        assert_ne!(code, 0, "{args:?}");
        assert_eq!(err.trim(), format!("gpumon: {says}"), "{args:?}");
    }
    // A zstd log given as a recording: what it is, not a parser's error.
    let dir = tempfile::tempdir().unwrap();
    let zst = write(
        dir.path(),
        "train.log.zst",
        &zstd(&std::fs::read(LOG).unwrap()),
    );
    let (code, _, err) = run(&["snapshot", "--replay", &zst]);
    assert_eq!(code, 2);
    assert!(
        err.contains("this is a text log, not a gpumon recording"),
        "{err}"
    );
}

/// The demo cut in the middle of a line, plain and compressed mid-frame, with the line the cut
/// falls in.
fn cut_demo(dir: &Path) -> [(String, usize); 2] {
    let demo = std::fs::read(DEMO).unwrap();
    let cut = &demo[..demo.len() * 2 / 3];
    let line = cut.iter().filter(|b| **b == b'\n').count() + 1;
    let plain = write(dir, "cut.ndjson", cut);
    // Frames of 10 lines, as `gpumon record` writes them; the sixth cut in half.
    let lines: Vec<&[u8]> = demo.split_inclusive(|b| *b == b'\n').collect();
    let frames: Vec<Vec<u8>> = lines.chunks(10).map(|c| zstd(&c.concat())).collect();
    let mut body = frames[..5].concat();
    body.extend_from_slice(&frames[5][..frames[5].len() / 2]);
    let zst = write(dir, "cut.ndjson.zst", &body);
    // The sixth frame's first block is whole: its first 5 lines are read too.
    [(plain, line), (zst, 56)]
}

#[test]
fn a_cut_recording_is_replayed_to_its_last_whole_line_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    for (path, line) in cut_demo(dir.path()) {
        let said = format!(
            "gpumon: {path} is cut off at line {line} (was the recording interrupted?): replayed \
             up to the last whole line before it"
        );
        let (code, out, err) = run(&["snapshot", "--replay", &path, "--format", "text"]);
        assert_eq!((code, err.trim()), (0, said.as_str()), "{out}");
        let (code, out, err) = run(&["explain", &path]);
        assert_eq!((code, err.trim()), (0, said.as_str()), "{out}");
        assert!(
            out.contains(&format!(
                "cut off at line {line}: replayed up to the last whole line before it"
            )),
            "{out}"
        );
        let (code, out, err) = run(&["diff", &path, DEMO]);
        assert_eq!((code, err.trim()), (0, said.as_str()), "{out}");
        assert!(out.starts_with(&format!(
            "A: {path} (a recording, replayed to its last sample)"
        )));
    }
    // A bad line in the middle is still an error naming it.
    let demo = std::fs::read_to_string(DEMO).unwrap();
    let mut lines: Vec<&str> = demo.lines().collect();
    lines[20] = "{\"at_ms\": oops}";
    let bad = write(
        dir.path(),
        "bad.ndjson",
        (lines.join("\n") + "\n").as_bytes(),
    );
    let (code, _, err) = run(&["explain", &bad]);
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!("{bad}: line 21: expected value")),
        "{err}"
    );
}

#[test]
fn a_missing_file_among_good_ones_is_named_and_the_good_ones_reported() {
    let (code, out, err) = run(&["explain", LOG, "/nonexistent/missing.log", LOG2]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        err.trim(),
        "gpumon: cannot read /nonexistent/missing.log: No such file or directory (os error 2)"
    );
    assert!(
        out.contains(&format!("{LOG}:")) && out.contains(&format!("{LOG2}:")),
        "{out}"
    );
    assert!(out.ends_with("2 allocation failure(s)\n"), "{out}");
    let (code, out, _) = run(&[
        "explain",
        LOG,
        "/nonexistent/missing.log",
        "--format",
        "json",
    ]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["unreadable"][0]["file"], "/nonexistent/missing.log");
    assert_eq!(v["failures"].as_array().unwrap().len(), 1);
    // Nothing readable: no report that would read as an all-clear.
    let (code, out, _) = run(&["explain", "/nonexistent/a.log", "/nonexistent/b.log"]);
    assert_eq!((code, out.as_str()), (1, ""));
}

#[test]
fn diff_compares_a_snapshot_with_a_recording() {
    let dir = tempfile::tempdir().unwrap();
    let (code, snap, err) = run(&["snapshot", "--replay", DEMO]);
    assert_eq!(code, 0, "{err}");
    let snap = write(dir.path(), "end.json", snap.as_bytes());
    let (code, out, err) = run(&["diff", &snap, DEMO]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("No differences that matter"), "{out}");
    let (code, out, err) = run(&["diff", SNAPSHOT, DEMO, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(!v["differences"].as_array().unwrap().is_empty(), "{out}");
}
