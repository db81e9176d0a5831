//! Nothing another user or machine wrote reaches the terminal as a control: a file name given to
//! `explain`, the errors of `snapshot --replay` and the binary-file refusal, a process whose
//! command line, user and log path hold escapes in a recording (`explain`, `snapshot --replay`
//! in text and JSON), and `diff` against a server whose host name and commands hold them. Every
//! byte on stdout and stderr is checked: none below 0x20 but newline and tab, no DEL, no C1 code
//! point.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

const EVIL: &str = "evil\x1b]0;PWNED\x07\x1b[2J\x1b[31mred\u{9b}31m\x7f";
/// The same, JSON-escaped, as a recording or a server would carry it.
const EVIL_JSON: &str = "evil\\u001b]0;PWNED\\u0007\\u001b[2J\\u001b[31mred\\u009b31m\\u007f";
const RECORDING: &str = "tests/fixtures/recordings/h100-oom-session.ndjson";
const SNAPSHOT: &str = "tests/fixtures/snapshots/h100-jax-prealloc.json";

fn gpumon() -> Command {
    let mut c = Command::cargo_bin("gpumon").unwrap();
    c.env("GPUMON_NVML_LIB", "/nonexistent/libnvidia-ml.so.1");
    c.timeout(std::time::Duration::from_secs(60));
    c
}

/// Panics if `bytes` hold a control a terminal would act on.
fn assert_harmless(what: &str, bytes: &[u8]) {
    for (i, b) in bytes.iter().enumerate() {
        assert!(
            (*b >= 0x20 || *b == b'\n' || *b == b'\t') && *b != 0x7f,
            "{what}: byte {b:#04x} at {i}: {}",
            String::from_utf8_lossy(bytes)
        );
    }
    let text = String::from_utf8_lossy(bytes);
    assert!(
        !text.chars().any(|c| ('\u{80}'..='\u{9f}').contains(&c)),
        "{what}: a C1 control: {text}"
    );
}

/// Runs `gpumon ARGS`, checks both streams and returns (status, stdout, stderr).
fn run(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let out = gpumon().args(args).output().unwrap();
    assert_harmless(&format!("stdout of {args:?}"), &out.stdout);
    assert_harmless(&format!("stderr of {args:?}"), &out.stderr);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn os(s: &str) -> &std::ffi::OsStr {
    s.as_ref()
}

/// The fixture recording with every process's command, user and a log path made hostile.
fn hostile_recording(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(RECORDING).unwrap();
    let text = text
        .replace("\"user\":\"", &format!("\"user\":\"{EVIL_JSON}"))
        .replace("\"command\":\"", &format!("\"command\":\"{EVIL_JSON} "))
        .replace(
            "\"framework\":",
            &format!("\"log\":[\"/tmp/{EVIL_JSON}.log\"],\"framework\":"),
        );
    let path = dir.join(format!("{EVIL}.ndjson"));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn an_evil_file_name_given_to_explain_is_escaped_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join(format!("{EVIL}.log"));
    std::fs::write(
        &log,
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a \
         total capacity of 79.19 GiB of which 1.00 GiB is free. Process 1 has 78.00 GiB memory \
         in use. \x1b]0;PWNED\x07\n",
    )
    .unwrap();
    for format in ["text", "json"] {
        let (code, out, _) = run(&[os("explain"), os("--format"), os(format), log.as_os_str()]);
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("PWNED"), "{out}");
    }
    // Missing, binary: each named on stderr, escaped.
    let missing = dir.path().join(format!("missing{EVIL}.log"));
    let (code, _, err) = run(&[os("explain"), missing.as_os_str()]);
    assert_eq!(code, 1);
    assert!(err.contains("\\u{1b}]0;PWNED\\u{7}"), "{err}");
    let binary = dir.path().join(format!("{EVIL}.bin"));
    std::fs::write(&binary, [0u8, 1, 2, 3, 0xff, 0xfe, 0, 0].repeat(64)).unwrap();
    let (code, _, err) = run(&[os("explain"), binary.as_os_str()]);
    assert_eq!(code, 1);
    assert!(err.contains("PWNED"), "{err}");
    let (code, _, err) = run(&[os("snapshot"), os("--replay"), binary.as_os_str()]);
    assert_ne!(code, 0);
    assert!(err.contains("PWNED"), "{err}");
    let (code, _, err) = run(&[os("snapshot"), os("--replay"), missing.as_os_str()]);
    assert_ne!(code, 0);
    assert!(err.contains("PWNED"), "{err}");
}

#[test]
fn a_recording_of_a_hostile_process_is_replayed_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let rec = hostile_recording(dir.path());
    let (code, out, err) = run(&[os("explain"), os("--format"), os("text"), rec.as_os_str()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("PWNED"), "{out}");
    for format in ["text", "json"] {
        let (code, out, err) = run(&[
            os("snapshot"),
            os("--replay"),
            rec.as_os_str(),
            os("--format"),
            os(format),
        ]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("PWNED"), "{out}");
    }
    // Into a file as well: `cat` shows it to a terminal.
    let file = dir.path().join("snap.txt");
    let (code, _, err) = run(&[
        os("snapshot"),
        os("--replay"),
        rec.as_os_str(),
        os("--format"),
        os("text"),
        os("--output"),
        file.as_os_str(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_harmless("the text file", &std::fs::read(&file).unwrap());
    // A recording cut mid-line: the notice names the file, escaped.
    let cut = dir.path().join(format!("cut{EVIL}.ndjson"));
    let whole = std::fs::read(&rec).unwrap();
    std::fs::write(&cut, &whole[..whole.len() - 40]).unwrap();
    let (_, _, err) = run(&[os("snapshot"), os("--replay"), cut.as_os_str()]);
    assert!(err.contains("PWNED"), "{err}");
}

#[test]
fn diff_against_a_server_with_a_hostile_host_name() {
    let snap = std::fs::read_to_string(SNAPSHOT)
        .unwrap()
        .replace("\"host\": \"vm\"", &format!("\"host\": \"{EVIL_JSON}\""))
        .replace("\"command\": \"", &format!("\"command\": \"{EVIL_JSON} "));
    assert!(snap.contains("PWNED"));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().take(8) {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                line.clear();
            }
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n",
                snap.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(snap.as_bytes());
        }
    });
    for format in ["text", "json"] {
        let (code, out, err) = run(&[
            os("diff"),
            os("--format"),
            os(format),
            os(&url),
            os(SNAPSHOT),
        ]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("PWNED"), "{format}: {out}");
    }
}

/// A bad value on the command line (a name pasted with its escapes) is said escaped too.
#[test]
fn command_line_errors_are_escaped() {
    for args in [
        &["--interval", EVIL][..],
        &["diff", EVIL, "http://\x1b]0;x\x07:9477"],
        &["serve", "--listen", EVIL],
    ] {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| os(a)).collect();
        let (code, _, err) = run(&args);
        assert_ne!(code, 0);
        assert!(err.starts_with("gpumon: "), "{err}");
    }
}

/// Every line gpumon writes goes through `format::terminal`: no other `print!` or `eprint!` in
/// the sources (tests aside), so a new message cannot skip the escape.
#[test]
fn no_output_skips_the_escape() {
    fn walk(dir: &Path, found: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, found);
            } else if p.extension().is_some_and(|x| x == "rs")
                && !p.ends_with("format/terminal.rs")
                && !p.ends_with("tests.rs")
            {
                let code = std::fs::read_to_string(&p).unwrap();
                let code = code.split("#[cfg(test)]").next().unwrap_or_default();
                for m in ["println!", "eprintln!", "print!(", "eprint!("] {
                    if code.contains(m) {
                        found.push(format!("{}: {m}", p.display()));
                    }
                }
            }
        }
    }
    let mut found = Vec::new();
    walk(Path::new("src"), &mut found);
    assert!(
        found.is_empty(),
        "write through say! or print_out: {found:?}"
    );
}
