//! Cut and dirty inputs (issue 41): a `.zst` recording or log cut mid-frame is read as far as its
//! whole blocks go, like a cut `.gz`; a log that logrotate's `copytruncate` left with NULs at its
//! start is read around them; and `explain` says "no allocation failures found" only of input read
//! whole with content: a cut input says where it was cut in the verdict (text and JSON), an empty
//! one that it was empty.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use assert_cmd::Command;

const RANKS: &str = "tests/fixtures/dist/h100-rank-by-rank/recording.ndjson.zst";

const OOM: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 \
                   has a total capacity of 79.19 GiB of which 1.00 GiB is free.\n";

fn explain(args: &[&str], stdin: &[u8]) -> (i32, String, String) {
    let out = Command::cargo_bin("gpumon")
        .unwrap()
        .env("GPUMON_NVML_LIB", "/nonexistent/libnvidia-ml.so.1")
        .timeout(Duration::from_secs(60))
        .arg("explain")
        .args(args)
        .write_stdin(stdin.to_vec())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path.to_str().unwrap().to_string()
}

fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// One zstd frame, as the `zstd` tool writes a file whole.
fn zstd_one_frame(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    ruzstd::encoding::compress(bytes, &mut out, ruzstd::encoding::CompressionLevel::Fastest);
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

#[test]
fn the_rank_by_rank_recording_cut_is_replayed_as_far_as_its_blocks_go() {
    let dir = tempfile::tempdir().unwrap();
    let whole = std::fs::read(RANKS).unwrap();
    // Cut in half, the file ends inside its first block (5.6 KiB of 10.6): nothing before the
    // cut decodes, and the refusal says so rather than calling it damaged.
    let half = write(dir.path(), "half.ndjson.zst", &whole[..whole.len() / 2]);
    let (code, out, err) = explain(&[&half], b"");
    assert_eq!(code, 1, "{out}");
    assert!(
        err.contains("cut off mid-frame") && err.contains("nothing before the cut could be read"),
        "{err}"
    );
    // Cut three quarters in, its first block (128 KiB, the first 45 of 136 lines) is read.
    let cut = write(dir.path(), "cut.ndjson.zst", &whole[..whole.len() * 3 / 4]);
    let (code, out, err) = explain(&[&cut], b"");
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("cut off at line "))
        .and_then(|l| l.split(':').next())
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or_else(|| panic!("no cut in the verdict: {out}"));
    assert!((10..136).contains(&line), "{line}");
    assert!(err.contains(&format!("is cut off at line {line}")), "{err}");
    let (_, out, _) = explain(&[&cut, "--format", "json"], b"");
    let v = json(&out);
    assert_eq!(v["recordings"][0]["whole"], false, "{out}");
    assert_eq!(v["recordings"][0]["cut_at_line"], line, "{out}");
    assert_eq!(v["recordings"][0]["samples"], line - 2, "{out}");
    let (_, out, _) = explain(&[RANKS, "--format", "json"], b"");
    assert_eq!(json(&out)["recordings"][0]["whole"], true);
}

#[test]
fn a_zst_log_cut_mid_frame_is_read_to_its_last_whole_block() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = Vec::new();
    for step in 0..20_000 {
        writeln!(log, "step {step} loss {:.4}", 1.0 / f64::from(step + 1)).unwrap();
        if step == 100 {
            log.extend_from_slice(OOM.as_bytes());
        }
    }
    let whole = zstd_one_frame(&log);
    let cut = write(dir.path(), "train.log.zst", &whole[..whole.len() * 9 / 10]);
    let (code, out, err) = explain(&[&cut, "--format", "json"], b"");
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    assert_eq!(v["failures"][0]["line"], 102, "{out}");
    let read = &v["inputs"][0];
    assert_eq!(read["whole"], false, "{out}");
    let at = read["cut_at_line"].as_u64().unwrap();
    assert_eq!(read["lines"].as_u64(), Some(at - 1), "{out}");
    assert!(at > 5000 && at < 20_002, "{out}");
}

#[test]
fn a_log_led_by_nuls_is_read_around_them() {
    let dir = tempfile::tempdir().unwrap();
    // What `copytruncate` leaves: the writer's offset kept, the start a hole of NULs.
    let mut log = vec![0u8; 4096];
    log.extend_from_slice(b"step 9 loss 0.3\n");
    log.extend_from_slice(OOM.as_bytes());
    for (name, bytes) in [("rotated.log", log.clone()), ("rotated.log.gz", gzip(&log))] {
        let path = write(dir.path(), name, &bytes);
        let (code, out, err) = explain(&[&path, "--format", "json"], b"");
        assert_eq!(code, 0, "{name}: {err}");
        let v = json(&out);
        assert_eq!(v["failures"][0]["line"], 2, "{name}: {out}");
        assert_eq!(v["failures"][0]["class"], "device-full", "{name}: {out}");
    }
}

#[test]
fn a_gz_log_cut_before_its_oom_is_no_all_clear() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = Vec::new();
    for step in 0..20_000 {
        writeln!(log, "step {step} loss {:.6}", 1.0 / f64::from(step + 1)).unwrap();
    }
    log.extend_from_slice(OOM.as_bytes());
    let whole = gzip(&log);
    let cut = write(dir.path(), "cut.log.gz", &whole[..whole.len() / 2]);
    let (code, out, _) = explain(&[&cut], b"");
    assert_eq!(code, 0);
    assert!(!out.starts_with("no allocation failures found"), "{out}");
    assert!(out.contains(&format!("{cut}: cut off at line ")), "{out}");
    assert!(
        out.ends_with("no allocation failures found in what was read\n"),
        "{out}"
    );
    let (_, out, _) = explain(&[&cut, "--format", "json"], b"");
    let v = json(&out);
    assert_eq!(v["failures"], serde_json::json!([]));
    assert_eq!(v["inputs"][0]["whole"], false, "{out}");
    assert!(v["inputs"][0]["cut_at_line"].as_u64().unwrap() > 1, "{out}");
    // A plain log ending inside a line may be cut there: said, not an all-clear.
    let (_, out, _) = explain(&["tests/fixtures/faults/cut-mid-line.log"], b"");
    assert_eq!(
        out,
        "tests/fixtures/faults/cut-mid-line.log: its last line, line 2, has no newline:\n  \
         the log may be cut off there\nno allocation failures found in what was read\n"
    );
}

#[test]
fn an_empty_input_says_it_was_empty() {
    let dir = tempfile::tempdir().unwrap();
    let empty = write(dir.path(), "empty.log", b"");
    let (code, out, _) = explain(&[&empty], b"");
    assert_eq!(
        (code, out),
        (0, format!("{empty}: empty, nothing to explain\n"))
    );
    let (code, out, _) = explain(&["-"], b"");
    assert_eq!((code, out.as_str()), (0, "-: empty, nothing to explain\n"));
    let (_, out, _) = explain(&["-", "--format", "json"], b"\n\n");
    let v = json(&out);
    assert_eq!(v["inputs"][0]["empty"], true, "{out}");
    assert_eq!(v["inputs"][0]["whole"], true, "{out}");
    // Beside a log with content, the verdict is on what was read.
    let ok = write(dir.path(), "ok.log", b"epoch 1 loss 0.3\n");
    let (_, out, _) = explain(&[&ok, &empty], b"");
    assert_eq!(
        out,
        format!(
            "{empty}: empty, nothing to explain\nno allocation failures found in what was read\n"
        )
    );
    let (_, out, _) = explain(&[&ok], b"");
    assert_eq!(out, "no allocation failures found\n");
}
