//! Long runs of digits collapsed before any pattern reads a line (issue 40): a request printed as
//! 16 KB of digits (a size computed wrong, or a line written to be slow) is no size, and every
//! pattern that scans it pays for its length (a 16 KB run parsed at about 1 MB/s where ordinary
//! lines go at 35). A run of digits, dots, exponents and signs longer than [`LONGEST`] becomes a
//! marker, `\x01N\x02` (N its index on the line), that every dialect's size fields accept
//! ([`RUN`]) and read as no size; no log line can hold one, as a line's control characters are
//! blanks by the time the patterns see it (`oom::clean`). The failure is found where it was, its
//! start on the line as it was written, and a size field that held a run says what it held
//! ([`Collapsed::restore`]: its first digits and its length).

use std::borrow::Cow;

use super::Event;
use super::sizes::Size;

/// Characters a run may hold and stay as it is: no size a framework prints comes near
/// (`18446744073709551615 bytes` has 20 digits, `1e308 GiB` 5).
pub const LONGEST: usize = 64;
/// A collapsed run as the size fields' patterns accept it (a macro, so that the dialects'
/// patterns can `concat!` it into theirs).
macro_rules! run {
    () => {
        r"\x01\d{1,4}\x02"
    };
}
pub(crate) use run;
/// Runs collapsed on one line at most (a 16 KiB line holds fewer than 260).
const MAX_RUNS: usize = 9_999;
/// Characters of a run quoted where it is said.
const SHOWN: usize = 16;

/// A line with its long runs collapsed, and what they were.
pub struct Collapsed<'a> {
    /// The line the patterns read.
    pub text: Cow<'a, str>,
    runs: Vec<Run>,
}

struct Run {
    /// Where its marker starts in `text`, and the marker's length.
    at: usize,
    marker: usize,
    /// Where it started on the line as written, and its length there.
    from: usize,
    len: usize,
    /// Its first characters.
    head: String,
}

fn in_run(b: u8) -> bool {
    b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-')
}

/// `text` with every run longer than [`LONGEST`] (holding a digit) collapsed; `text` itself,
/// borrowed, when it has none (nearly every line: one pass over its bytes).
pub fn collapse(text: &str) -> Collapsed<'_> {
    let bytes = text.as_bytes();
    let mut stretch = 0;
    let worth = bytes.iter().any(|&b| {
        stretch = if in_run(b) { stretch + 1 } else { 0 };
        stretch > LONGEST || b == 1 || b == 2
    });
    if !worth {
        return Collapsed {
            text: Cow::Borrowed(text),
            runs: Vec::new(),
        };
    }
    let mut out = String::with_capacity(text.len().min(4096));
    let mut runs = Vec::new();
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if !in_run(bytes[i]) {
            i += 1;
            continue;
        }
        let mut start = i;
        while i < bytes.len() && in_run(bytes[i]) {
            i += 1;
        }
        // An `e` that starts it ends a word ("size-1…").
        while start < i && matches!(bytes[start], b'e' | b'E') {
            start += 1;
        }
        let run = &text[start..i];
        if run.len() > LONGEST && runs.len() < MAX_RUNS && run.bytes().any(|b| b.is_ascii_digit()) {
            copy(&mut out, &text[copied..start]);
            let marker = format!("\x01{}\x02", runs.len());
            runs.push(Run {
                at: out.len(),
                marker: marker.len(),
                from: start,
                len: run.len(),
                head: run[..SHOWN].to_string(),
            });
            out.push_str(&marker);
            copied = i;
        }
    }
    if runs.is_empty() && !text.contains(['\x01', '\x02']) {
        return Collapsed {
            text: Cow::Borrowed(text),
            runs,
        };
    }
    copy(&mut out, &text[copied..]);
    Collapsed {
        text: Cow::Owned(out),
        runs,
    }
}

/// Appends `s`, any marker character in it a blank (a line that was not cleaned).
fn copy(out: &mut String, s: &str) {
    if s.contains(['\x01', '\x02']) {
        out.push_str(&s.replace(['\x01', '\x02'], " "));
    } else {
        out.push_str(s);
    }
}

impl Collapsed<'_> {
    /// `said` (a field or key read from [`Collapsed::text`]) with each marker told as the run it
    /// stands for: "1111111111111111… (16000 characters)".
    pub fn said(&self, said: &str) -> String {
        if !said.contains('\x01') {
            return said.to_string();
        }
        let mut out = String::with_capacity(said.len());
        let mut rest = said;
        while let Some(i) = rest.find('\x01') {
            out.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            let Some(j) = after.find('\x02') else {
                break;
            };
            match after[..j]
                .parse::<usize>()
                .ok()
                .and_then(|n| self.runs.get(n))
            {
                Some(r) => out.push_str(&format!("{}… ({} characters)", r.head, r.len)),
                None => out.push(' '),
            }
            rest = &after[j + 1..];
        }
        out.push_str(rest);
        out
    }

    /// Where a position in [`Collapsed::text`] was on the line as written.
    pub fn original(&self, at: usize) -> usize {
        let mut shift = 0usize;
        for r in &self.runs {
            if at < r.at {
                break;
            }
            if at < r.at + r.marker {
                return r.from;
            }
            shift = r.from + r.len - (r.at + r.marker);
        }
        at + shift
    }

    /// An event read from [`Collapsed::text`], told of the line as written: its start there, and
    /// each field that held a run saying what it held.
    pub fn restore(&self, mut e: Event) -> Event {
        if self.runs.is_empty() {
            return e;
        }
        e.start = self.original(e.start);
        e.key = e.key.map(|k| self.said(&k));
        let n = &mut e.numbers;
        n.request_unreadable = n.request_unreadable.take().map(|s| self.said(&s));
        n.tensor = n.tensor.take().map(|s| self.said(&s));
        n.op = n.op.take().map(|s| self.said(&s));
        e
    }
}

/// A size field read with `parse`, or, when it holds a collapsed run, no size and the field's
/// text (which says what it held once the event is restored).
pub fn size(field: &str, parse: impl Fn(&str) -> Option<Size>) -> (Option<Size>, Option<String>) {
    if field.contains('\x01') {
        (None, Some(field.to_string()))
    } else {
        (parse(field), None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_runs_and_plain_lines_are_borrowed() {
        for line in [
            "CUDA out of memory. Tried to allocate 19.68 GiB. GPU 0 has a total capacity",
            "18446744073709551615 bytes, 1e308 GiB, -5.00 GiB",
            &"-".repeat(200),
            &format!("size {}", "e".repeat(100)),
        ] {
            let c = collapse(line);
            assert!(matches!(c.text, Cow::Borrowed(_)), "{line}");
            assert_eq!(c.original(10), 10);
        }
    }

    #[test]
    fn a_long_run_becomes_a_marker_and_is_told_back() {
        let digits = "1".repeat(16_000);
        let line = format!("Tried to allocate {digits} GiB. GPU 3 has");
        let c = collapse(&line);
        assert_eq!(c.text, "Tried to allocate \x010\x02 GiB. GPU 3 has");
        assert_eq!(
            c.said("\x010\x02 GiB"),
            "1111111111111111… (16000 characters) GiB"
        );
        let gpu = c.text.find("GPU").unwrap();
        assert_eq!(&line[c.original(gpu)..], "GPU 3 has");
        assert_eq!(c.original(18), 18, "inside the marker: the run's start");
        assert_eq!(c.original(19), 18);
        assert_eq!(c.original(5), 5);
    }

    #[test]
    fn runs_with_dots_exponents_and_signs_and_a_word_before() {
        let run = format!("-{}.5e+{}", "9".repeat(40), "3".repeat(40));
        let line = format!("a size{run} b {run}");
        let c = collapse(&line);
        assert_eq!(c.text, "a size\x010\x02 b \x011\x02");
        assert!(
            c.said(&c.text).starts_with("a size-999999999999999… ("),
            "{}",
            c.said(&c.text)
        );
        assert_eq!(c.runs[0].from, line.find("-9").unwrap());
        assert_eq!(c.runs[1].len, run.len());
    }

    #[test]
    fn markers_cannot_come_from_the_line() {
        let forged = format!("Tried to allocate \x010\x02 GiB and {}", "7".repeat(80));
        let c = collapse(&forged);
        assert_eq!(c.text, "Tried to allocate  0  GiB and \x010\x02");
        let alone = collapse("Tried to allocate \x010\x02 GiB");
        assert_eq!(alone.text, "Tried to allocate  0  GiB");
        let parse = |s: &str| Some(Size::exact(s.len() as u64));
        assert_eq!(size(&alone.text, parse).1, None);
        assert_eq!(size(&c.text, parse), (None, Some(c.text.to_string())));
    }
}
