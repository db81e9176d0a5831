//! Logs an unlucky user or an attacker hands `gpumon explain` (issue 40): a gzip log followed by
//! zeros or garbage read as `zcat` reads it, PyTorch's sizes no program means called unreadable
//! (16,000 digits among them, in every dialect, the rest of the line read), and rank prefixes no
//! rank can have never attached to another line's rank.

use std::io::Write;
use std::path::Path;

use assert_cmd::Command;

const OOM: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 \
                   has a total capacity of 79.19 GiB of which 1.00 GiB is free.";

/// `explain --format json FILE`: (status, the document, stderr).
fn explain(path: &Path) -> (i32, serde_json::Value, String) {
    let out = Command::cargo_bin("gpumon")
        .unwrap()
        .timeout(std::time::Duration::from_secs(60))
        .args(["explain", "--format", "json"])
        .arg(path)
        .output()
        .unwrap();
    let doc = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (
        out.status.code().unwrap_or(-1),
        doc,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn failures(doc: &serde_json::Value) -> &Vec<serde_json::Value> {
    doc["failures"].as_array().unwrap()
}

#[test]
fn a_gzip_log_followed_by_zeros_or_garbage_keeps_its_findings() {
    let dir = tempfile::tempdir().unwrap();
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    writeln!(enc, "step 1\n{OOM}").unwrap();
    let gz = enc.finish().unwrap();
    for (name, tail, said) in [
        ("zeros.log.gz", vec![0u8; 1 << 20], false),
        ("garbage.log.gz", b"\x00\x00\x13\x37 garbage".to_vec(), true),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, [gz.clone(), tail].concat()).unwrap();
        let (code, doc, err) = explain(&path);
        assert_eq!(code, 0, "{name}: {err}");
        assert_eq!(failures(&doc).len(), 1, "{name}: {doc}");
        assert_eq!(err.contains("not gzip: ignored"), said, "{name}: {err}");
    }
}

#[test]
fn sizes_no_program_means_are_unreadable_not_missing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sizes.log");
    let mut text = String::from(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate more than 1EB memory.\n",
    );
    for req in ["-5.00 GiB", "1e308 GiB", "NaN GiB", "16.00 EiB"] {
        text.push_str(&format!(
            "step\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate {req}. GPU 0 has \
             a total capacity of 79.19 GiB of which 1.00 GiB is free.\n"
        ));
    }
    std::fs::write(&path, text).unwrap();
    let (code, doc, err) = explain(&path);
    assert_eq!(code, 0, "{err}");
    let found = failures(&doc);
    assert_eq!(found.len(), 5, "{doc}");
    for f in found {
        let said = f.to_string();
        assert!(said.contains("request_unreadable"), "{said}");
        assert!(!said.contains("Upgrade PyTorch"), "{said}");
        assert!(said.contains("computed wrong"), "{said}");
    }
}

#[test]
fn a_rank_no_job_can_have_is_nobodys() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ranks.log");
    std::fs::write(
        &path,
        format!(
            "[rank999999999999]: {OOM}\n[rank5]: Traceback (most recent call last):\n\
             [rank5]:   File \"train.py\", line 3, in <module>\n"
        ),
    )
    .unwrap();
    let (_, doc, _) = explain(&path);
    let found = failures(&doc);
    assert_eq!(found.len(), 1, "{doc}");
    assert!(found[0]["rank"].is_null(), "not rank 5's: {doc}");

    let absurd = ["1048576", "1048577", "99999999", "4294967296"];
    let text: String = absurd
        .iter()
        .map(|r| format!("[rank{r}]: {OOM}\n"))
        .collect();
    std::fs::write(&path, text).unwrap();
    let (_, doc, _) = explain(&path);
    let found = failures(&doc);
    assert_eq!(found.len(), 4, "each prefix its own failure: {doc}");
    assert!(found.iter().all(|f| f["rank"].is_null()), "{doc}");
    assert!(!doc.to_string().contains("rank 1048576"), "{doc}");
}

/// A request printed as 16,000 digits is still PyTorch's OOM, its size unreadable and the rest of
/// the message read; CuPy's and NCCL's, which were lost, are found (every dialect reads a long run
/// of digits alike). 2,000 such PyTorch lines took 31.7 s in a release build, now 0.26 s.
#[test]
fn a_request_of_16000_digits_is_found_unreadable_with_the_rest_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("digits.log");
    let digits = "7".repeat(16_000);
    let mut text = String::new();
    for gpu in 0..3 {
        text.push_str(&format!(
            "step {gpu}\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate {digits} \
             GiB. GPU {gpu} has a total capacity of 79.19 GiB of which 1.00 GiB is free. \
             Including non-PyTorch memory, this process has 78.00 GiB memory in use.\n"
        ));
    }
    text.push_str(&format!(
        "cupy.cuda.memory.OutOfMemoryError: Out of memory allocating {digits} bytes.\n\
         h:9:9 [0] alloc.h:185 NCCL WARN Failed to CUDA calloc {digits} bytes\n"
    ));
    std::fs::write(&path, text).unwrap();
    let (code, doc, err) = explain(&path);
    assert_eq!(code, 0, "{err}");
    let found = failures(&doc);
    assert_eq!(found.len(), 5, "{doc:.2000}");
    for (gpu, f) in found.iter().take(3).enumerate() {
        let n = &f["numbers"];
        assert_eq!(f["source"], "pytorch");
        assert!(n["request"].is_null());
        assert_eq!(
            n["request_unreadable"],
            "7777777777777777… (16000 characters) GiB"
        );
        assert_eq!(n["device"], gpu);
        assert_eq!(n["total"]["bytes"], 85_029_615_043_u64, "{n}");
        assert!(n["free"]["bytes"].is_u64(), "{n}");
        assert!(n["holders"][0]["used"]["bytes"].is_u64(), "{n}");
        assert!(f.to_string().contains("computed wrong"), "{f}");
    }
    assert_eq!(found[3]["source"], "cupy");
    assert_eq!(found[4]["source"], "nccl");
    for f in &found[3..] {
        let said = f["numbers"]["request_unreadable"]
            .as_str()
            .unwrap_or_default();
        assert!(
            said.starts_with("7777777777777777… (16000 characters)"),
            "{f}"
        );
    }
}
