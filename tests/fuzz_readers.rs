//! Fuzzing the file readers: arbitrary bytes and mutated real documents given to the recording
//! reader and the snapshot parser never panic; a refusal is one line naming the file; what is
//! accepted goes through `State`, the screen, a snapshot and `diff` without a panic, and a
//! snapshot written from it reads back. `PROPTEST_CASES` sets the runs (default 48, to stay fast).

use std::path::Path;

use gpumon::model::{Config, Event};
use gpumon::screen::{Msg, State};
use gpumon::snapshot::{self, Snapshot};
use gpumon::source::replay::{ReplaySource, demo};
use proptest::prelude::*;

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

fn demo_lines() -> Vec<&'static [u8]> {
    demo()
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect()
}

/// Byte edits (insert, overwrite, delete), a number swapped for an odd one, and a cut.
#[derive(Debug, Clone)]
struct Mutation {
    /// (where, byte, which edit)
    edits: Vec<(usize, u8, u8)>,
    /// (which number, which odd value, a random one)
    number: (usize, usize, u64),
    cut: usize,
}

fn mutate(mut b: Vec<u8>, m: &Mutation) -> Vec<u8> {
    let number = m.number;
    let odd = [
        number.2.to_string(),
        u64::MAX.to_string(),
        "18446744073709551616".into(),
        "-1".into(),
        "1e400".into(),
        "NaN".into(),
        "null".into(),
        "\"7\"".into(),
        "0".into(),
    ];
    let runs: Vec<(usize, usize)> = digit_runs(&b);
    if let Some(&(start, end)) = runs.get(number.0 % (runs.len() + 1)) {
        let with = odd[number.1 % odd.len()].as_bytes();
        b.splice(start..end, with.iter().copied());
    }
    for &(at, byte, op) in &m.edits {
        let i = at % (b.len() + 1);
        match op % 3 {
            0 => b.insert(i, byte),
            1 if i < b.len() => b[i] = byte,
            2 if i < b.len() => {
                b.remove(i);
            }
            _ => {}
        }
    }
    if m.cut.is_multiple_of(4) {
        b.truncate(m.cut % (b.len() + 1));
    }
    b
}

fn digit_runs(b: &[u8]) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            runs.push((start, i));
        } else {
            i += 1;
        }
    }
    runs
}

fn mutations() -> impl Strategy<Value = Mutation> {
    (
        prop::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 0..4),
        (any::<usize>(), any::<usize>(), any::<u64>()),
        any::<usize>(),
    )
        .prop_map(|(edits, number, cut)| Mutation { edits, number, cut })
}

fn state(interval_ms: u64) -> State {
    State::new(Config::new(interval_ms.max(1), 600_000))
}

/// A recording: refused in one line naming the file, or replayed through everything.
fn check_recording(bytes: &[u8]) {
    let mut source = match ReplaySource::read("fuzz.ndjson", bytes) {
        Ok(s) => s,
        Err(e) => {
            let text = e.to_string();
            assert!(
                text.starts_with("fuzz.ndjson: ") && !text.chars().any(char::is_control),
                "{text}"
            );
            return;
        }
    };
    let mut st = state(source.header().interval_ms);
    st.update(Msg::from(Event::Started(source.header().machine.clone())));
    // A bad line ends the replay there (named like a bad header); what came before is kept.
    for s in source.samples() {
        match s {
            Ok(s) => {
                st.update(Msg::from(Event::Sample(s)));
            }
            Err(e) => {
                let text = e.to_string();
                assert!(
                    text.starts_with("fuzz.ndjson: ") && !text.chars().any(char::is_control),
                    "{text}"
                );
                break;
            }
        }
    }
    for (w, h) in [(120, 40), (80, 24), (1, 1)] {
        let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).unwrap();
        t.draw(|f| gpumon::view::render(f, &st)).unwrap();
    }
    let snap = Snapshot::from_state(&st, st.machine().now_ms);
    let back = snapshot::parse(Path::new("written.json"), &snap.to_json());
    assert_eq!(
        back.as_ref().ok(),
        Some(&snap),
        "a written snapshot reads back: {back:?}"
    );
    check_snapshot_doc(&snap);
}

/// Everything done with a snapshot that was read: text, diff against the demo's end.
fn check_snapshot_doc(snap: &Snapshot) {
    let _ = snapshot::text::render(snap);
    let d = snapshot::diff::diff(snap, snap);
    let _ = (
        snapshot::diff::render_text(&d),
        snapshot::diff::render_json(&d),
    );
}

fn check_snapshot(bytes: &[u8]) {
    match snapshot::parse(Path::new("fuzz.json"), bytes) {
        Ok(snap) => check_snapshot_doc(&snap),
        Err(e) => {
            let text = e.to_string();
            assert!(
                text.starts_with("fuzz.json: ") && !text.chars().any(char::is_control),
                "{text}"
            );
        }
    }
}

/// The snapshot of the whole demo, pretty JSON.
fn demo_snapshot() -> Vec<u8> {
    let mut source = ReplaySource::read("demo", demo()).unwrap();
    let mut st = state(source.header().interval_ms);
    st.update(Msg::from(Event::Started(source.header().machine.clone())));
    for s in source.samples() {
        st.update(Msg::from(Event::Sample(s.unwrap())));
    }
    Snapshot::from_state(&st, st.machine().now_ms).to_json()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn recording_reader_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        check_recording(&bytes);
        let header = demo_lines()[0];
        check_recording(&[header, b"\n", &bytes].concat());
    }

    #[test]
    fn recording_reader_mutated_demo(first in 1usize..100, n in 1usize..4, m in mutations()) {
        let lines = demo_lines();
        let end = (first + n).min(lines.len());
        let body = lines[first..end].join(&b'\n');
        let body = mutate(body, &m);
        check_recording(&[lines[0], b"\n", &body].concat());
        let header = mutate(lines[0].to_vec(), &m);
        check_recording(&[header.as_slice(), b"\n", lines[first]].concat());
    }

    #[test]
    fn snapshot_parser_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        check_snapshot(&bytes);
        check_snapshot(&[b"{\"schema\": \"gpumon.snapshot/1\", ".as_slice(), &bytes].concat());
    }

    #[test]
    fn snapshot_parser_mutated_demo(m in mutations()) {
        thread_local!(static DEMO_SNAPSHOT: Vec<u8> = demo_snapshot());
        let doc = DEMO_SNAPSHOT.with(Clone::clone);
        check_snapshot(&mutate(doc, &m));
    }
}
