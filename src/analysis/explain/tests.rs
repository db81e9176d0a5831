//! `explain` over files: text at 80 columns, JSON, nothing found, unreadable files.

use std::io::Write;

use super::*;

fn file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f
}

const LOG: &str = "epoch 1\ntorch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 496.00 MiB. GPU 0 has a total capacty of 14.75 GiB of which 235.06 MiB is free. Process 20398 has 14.52 GiB memory in use. Of the allocated memory 14.06 GiB is allocated by PyTorch, and 330.42 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting max_split_size_mb to avoid fragmentation.";

#[test]
fn text_lists_each_failure_within_80_columns() {
    let f = file(LOG);
    let out = explain(&[f.path().to_path_buf()], Format::Text).unwrap();
    assert!(out.contains(":2: PyTorch split (certain)"), "{out}");
    assert!(out.contains("remedy: Set PYTORCH_ALLOC_CONF=expandable_segments:True"));
    assert!(out.contains("1 allocation failure(s)"));
    for l in out.lines() {
        assert!(l.chars().count() <= 80, "{l}");
    }
}

#[test]
fn json_has_numbers_class_and_remedy() {
    let f = file(LOG);
    let out = explain(&[f.path().to_path_buf()], Format::Json).unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let first = &v["failures"][0];
    assert_eq!(first["class"], "split");
    assert_eq!(first["confidence"], "certain");
    assert_eq!(first["source"], "pytorch");
    assert_eq!(first["line"], 2);
    assert_eq!(first["numbers"]["request"]["bytes"], 520_093_696);
    assert!(
        first["remedy"]
            .as_str()
            .unwrap()
            .contains("expandable_segments")
    );
}

#[test]
fn nothing_found_and_unreadable() {
    let f = file("all good\n");
    let out = explain(&[f.path().to_path_buf()], Format::Text).unwrap();
    assert_eq!(out, "no allocation failures found\n");
    let err = explain(&[PathBuf::from("/nonexistent/x.log")], Format::Text).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("cannot read /nonexistent/x.log:")
    );
}
