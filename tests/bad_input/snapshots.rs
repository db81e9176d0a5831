//! Broken snapshots through `snapshot::parse`, `snapshot::read` and `gpumon diff`.

use std::path::Path;

use gpumon::model::{Config, Event};
use gpumon::screen::{Msg, State};
use gpumon::snapshot::{self, Snapshot};
use gpumon::source::replay::ReplaySource;

use super::{TWO_GIB, fails_with, file, sparse};

/// A real snapshot: the end of the demo recording, pretty JSON over many lines.
fn good() -> String {
    let mut source = ReplaySource::read("demo", gpumon::source::replay::demo()).unwrap();
    let mut st = State::new(Config::new(source.header().interval_ms, 600_000));
    st.update(Msg::from(Event::Started(source.header().machine.clone())));
    for s in source.samples() {
        st.update(Msg::from(Event::Sample(s.unwrap())));
    }
    let snap = Snapshot::from_state(&st, st.machine().now_ms);
    String::from_utf8(snap.to_json()).unwrap()
}

/// Replaces the first occurrence of `from`, which must be there.
fn edit(text: &str, from: &str, to: &str) -> Vec<u8> {
    assert!(text.contains(from), "{from}");
    text.replacen(from, to, 1).into_bytes()
}

/// (file name, contents, what the error says after "NAME: ", whether it names a line).
fn cases() -> Vec<(&'static str, Vec<u8>, &'static str, bool)> {
    let g = good();
    let half = g.len() / 2;
    vec![
        ("empty.json", vec![], "empty file", false),
        (
            "truncated.json",
            g.as_bytes()[..half].to_vec(),
            "not JSON: EOF while parsing",
            true,
        ),
        (
            "version.json",
            edit(&g, "gpumon.snapshot/4", "gpumon.snapshot/5"),
            "schema \"gpumon.snapshot/5\" is newer",
            false,
        ),
        (
            "foreign.json",
            edit(&g, "gpumon.snapshot/4", "gpumon.recording/1"),
            "not a gpumon snapshot",
            false,
        ),
        (
            "types.json",
            edit(
                &g,
                "\"taken_at_ms\": ",
                "\"taken_at_ms\": \"soon\", \"x\": ",
            ),
            "invalid gpumon.snapshot/4 document: invalid type: string \"soon\"",
            true,
        ),
        (
            "nan.json",
            edit(&g, "\"total\": ", "\"total\": NaN, \"x\": "),
            "not JSON: expected value",
            true,
        ),
        (
            "negative.json",
            edit(&g, "\"total\": ", "\"total\": -5, \"x\": "),
            "invalid gpumon.snapshot/4 document: invalid value: integer `-5`",
            true,
        ),
        (
            "utf8.json",
            [&g.as_bytes()[..half], b"\xff\xfe", &g.as_bytes()[half..]].concat(),
            "not JSON",
            true,
        ),
        (
            "utf8_string.json",
            edit(&g, "\"host\": \"", "\"host\": \"\u{0}")
                .iter()
                .map(|&b| if b == 0 { 0xff } else { b })
                .collect(),
            "not JSON: invalid unicode code point",
            true,
        ),
    ]
}

#[test]
fn the_reader_names_the_file_and_line_of_each_fault() {
    for (name, bytes, expect, has_line) in cases() {
        let e = snapshot::parse(Path::new(name), &bytes)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(&format!("{name}: {expect}")), "{name}: {e}");
        assert!(!e.contains('\n'), "{name}: {e}");
        assert_eq!(e.contains(" at line "), has_line, "{name}: {e}");
    }
}

#[test]
fn diff_refuses_each_with_one_line_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let ok = file(dir.path(), "ok.json", good().as_bytes());
    for (name, bytes, expect, has_line) in cases() {
        let bad = file(dir.path(), name, &bytes);
        for args in [["diff", &bad, &ok], ["diff", &ok, &bad]] {
            let err = fails_with(2, &args);
            assert!(err.contains(&format!("{bad}: {expect}")), "{args:?}: {err}");
            assert_eq!(err.contains(" at line "), has_line, "{err}");
        }
    }
}

#[test]
fn a_2_gib_snapshot_is_refused_without_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    let huge = sparse(dir.path(), "huge.json", b"{\"schema\": ", TWO_GIB);
    let e = snapshot::read(&huge).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("{huge}: {TWO_GIB} bytes; a snapshot is at most")),
        "{e}"
    );
    let ok = file(dir.path(), "ok.json", good().as_bytes());
    let err = fails_with(2, &["diff", &ok, &huge]);
    assert!(err.contains(&format!("{huge}: {TWO_GIB} bytes")), "{err}");
    let err = fails_with(2, &["diff", &ok, dir.path().to_str().unwrap()]);
    assert!(
        err.contains(dir.path().to_str().unwrap()),
        "a directory: {err}"
    );
}
