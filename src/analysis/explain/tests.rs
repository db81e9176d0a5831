//! `explain` over logs: text at 80 columns, JSON, nothing found, a stream cut off, unreadable
//! files named.

use std::io;

use super::*;

/// The report on one log `t.log` holding `text`.
fn explain(text: &str, format: Format) -> String {
    let log = read_log("t.log", text.as_bytes()).unwrap();
    render(&Logs::new(vec![log], Vec::new()), format, None)
}

const LOG: &str = "epoch 1\ntorch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 496.00 MiB. GPU 0 has a total capacty of 14.75 GiB of which 235.06 MiB is free. Process 20398 has 14.52 GiB memory in use. Of the allocated memory 14.06 GiB is allocated by PyTorch, and 330.42 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting max_split_size_mb to avoid fragmentation.";

#[test]
fn text_lists_each_failure_within_80_columns() {
    let out = explain(LOG, Format::Text);
    // A line alone is never sure (issue 39): a leak fills a cap the same way.
    assert!(out.contains("t.log:2: PyTorch split (likely)"), "{out}");
    assert!(
        out.contains("from this line alone a leak cannot be ruled out"),
        "{out}"
    );
    assert!(
        out.contains("remedy: Lower the peak (a smaller batch), or call torch.cuda.empty_cache()"),
        "{out}"
    );
    assert!(out.contains("1 allocation failure(s)"));
    for l in out.lines() {
        assert!(l.chars().count() <= 80, "{l}");
    }
}

#[test]
fn json_has_numbers_class_and_remedy() {
    let out = explain(LOG, Format::Json);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let first = &v["failures"][0];
    assert_eq!(first["class"], "split");
    assert_eq!(first["confidence"], "likely");
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
fn nothing_found_a_cut_stream_and_unreadable_files() {
    assert_eq!(
        explain("all good\n", Format::Text),
        "no allocation failures found\n"
    );
    /// Two lines, then a compressed stream's end missing.
    struct Cut(bool);
    impl io::Read for Cut {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if std::mem::replace(&mut self.0, true) {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            let text = b"epoch 1\nepoch 2\nepo";
            buf[..text.len()].copy_from_slice(text);
            Ok(text.len())
        }
    }
    let log = read_log("cut.log.gz", Cut(false)).unwrap();
    assert_eq!(log.read.cut_at_line, Some(3));
    assert_eq!(log.read.lines, 2, "the cut line is not read");
    let gone = Unreadable {
        file: "/nonexistent/x.log".into(),
        error: "cannot read /nonexistent/x.log: No such file or directory".into(),
    };
    let out = render(&Logs::new(vec![log], vec![gone]), Format::Json, None);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["logs"], serde_json::json!(["cut.log.gz"]));
    assert_eq!(v["unreadable"][0]["file"], "/nonexistent/x.log");
}
