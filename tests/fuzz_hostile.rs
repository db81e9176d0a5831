//! Fuzzing what stands between hostile input and the user (issue 40): the one terminal escape
//! leaves no control in any text and keeps JSON valid and equal; a paste never makes anything but
//! typed characters; a gzip stream followed by any bytes keeps its text. `PROPTEST_CASES` sets
//! the runs (default 256).

use std::io::{Read, Write};

use gpumon::format::{Format, escape, is_unsafe};
use gpumon::infile::Input;
use gpumon::input::{Action, map_paste};
use proptest::prelude::*;

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

/// Text rich in what a terminal acts on: C0, DEL, C1, bidi and zero-width characters.
fn hostile_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            any::<char>(),
            (0u32..0x20).prop_map(|c| char::from_u32(c).unwrap()),
            (0x7fu32..0xa0).prop_map(|c| char::from_u32(c).unwrap()),
            prop::sample::select(vec![
                '\u{202e}', '\u{200b}', '\u{2066}', '\u{feff}', '\u{1b}'
            ]),
        ],
        0..64,
    )
    .prop_map(|v| v.into_iter().collect())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn escaped_text_holds_no_control(text in hostile_text()) {
        let safe = escape(&text, Format::Text);
        prop_assert!(!safe.chars().any(is_unsafe));
        prop_assert!(!safe.chars().any(|c| c.is_control() && c != '\n' && c != '\t'));
        // What was safe is kept as it was.
        if !text.chars().any(is_unsafe) {
            prop_assert_eq!(safe.as_ref(), text.as_str());
        }
    }

    #[test]
    fn escaped_json_is_the_same_json(text in hostile_text()) {
        let doc = serde_json::to_string(&serde_json::json!({ "command": text })).unwrap();
        let safe = escape(&doc, Format::Json);
        prop_assert!(!safe.chars().any(is_unsafe));
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        prop_assert_eq!(back["command"].as_str(), Some(text.as_str()));
    }

    #[test]
    fn a_paste_is_only_typed_characters(text in hostile_text(), prompt in any::<bool>()) {
        let actions = map_paste(&text, prompt);
        prop_assert!(prompt || actions.is_empty());
        prop_assert!(actions.len() <= gpumon::input::PROMPT_MAX);
        for a in actions {
            prop_assert!(matches!(a, Action::PromptChar(c) if !c.is_control()), "{:?}", a);
        }
    }

    #[test]
    fn gzip_then_any_bytes_keeps_its_text(
        text in "[a-z \\n]{0,200}",
        tail in prop::collection::vec(any::<u8>(), 0..512),
    ) {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(text.as_bytes()).unwrap();
        let stored = [enc.finish().unwrap(), tail.clone()].concat();
        let input = Input::from_reader("fuzz.gz", std::io::Cursor::new(stored)).unwrap();
        let mut out = Vec::new();
        let read = input.reader().read_to_end(&mut out);
        // A tail that starts another gzip member may be a damaged one (a fault, as zcat's);
        // anything else ends the text after the first member's.
        if tail.first() != Some(&0x1f) {
            prop_assert!(read.is_ok(), "{:?}", read);
            prop_assert_eq!(out, text.as_bytes());
        } else {
            prop_assert!(out.starts_with(text.as_bytes()));
        }
    }
}
