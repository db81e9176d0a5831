//! The one escape between data and a terminal: every report on stdout and every line on stderr
//! (`say!`) goes through `escape`, so a command line, user, file name, log line or remote host
//! name that holds ESC, BEL, DEL, a C1 control or an invisible formatting character is shown as
//! its `\u{…}` escape and never interpreted.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Write as _;

use super::Format;

/// Whether `c` must not reach a terminal as itself: a C0 control (newline and tab are text's own),
/// DEL, a C1 control (U+0080–U+009F: CSI, OSC… to a terminal that reads them), or an invisible
/// formatting character (bidirectional overrides and isolates, zero-width ones) that would make
/// the text read other than it is.
pub fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2069}' | '\u{feff}' | '\u{061c}')
}

/// `text` with every unsafe character escaped: `\u{1b}` in text; in JSON (where serde already
/// escaped what is below U+0020, and the rest can only stand inside a string) `\u001b`, so the
/// document stays valid JSON and reads back to the same string.
pub fn escape(text: &str, form: Format) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match (is_unsafe(c), form) {
            (false, _) => out.push(c),
            (true, Format::Text) => out.extend(c.escape_unicode()),
            (true, Format::Json) => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
        }
    }
    Cow::Owned(out)
}

/// Writes one line to stderr, escaped: what `say!` calls.
pub fn say_line(args: std::fmt::Arguments) {
    let line = format!("{args}\n");
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(escape(&line, Format::Text).as_bytes());
}

/// `eprintln!` for gpumon: the line is escaped on its way to stderr.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::format::terminal::say_line(format_args!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped_and_lines_kept() {
        let evil = "evil\x1b]0;PWNED\x07\x1b[2J\x1b[31mred.log\r\x7f\u{9b}31m\u{202e}x\n\tok";
        let text = escape(evil, Format::Text);
        assert_eq!(
            text,
            "evil\\u{1b}]0;PWNED\\u{7}\\u{1b}[2J\\u{1b}[31mred.log\\u{d}\\u{7f}\\u{9b}31m\\u{202e}x\n\tok"
        );
        assert!(!text.chars().any(is_unsafe));
        assert!(matches!(escape("plain\n", Format::Text), Cow::Borrowed(_)));
    }

    #[test]
    fn json_stays_json() {
        let doc =
            serde_json::to_string(&serde_json::json!({"c": "a\x1b\u{9b}\u{7f}\u{202e}b"})).unwrap();
        let safe = escape(&doc, Format::Json);
        assert!(!safe.chars().any(is_unsafe), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back["c"], "a\x1b\u{9b}\u{7f}\u{202e}b");
    }
}
