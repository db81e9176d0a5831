//! Text from someone else's process made safe to print (a file, a function, an exception's
//! message), and a frame's short label: shared by a probe's maps and its end and place.

/// Longest file name kept, and function name (the contract's bounds; a longer one is cut).
pub const MAX_FILE: usize = 256;
pub const MAX_FUNCTION: usize = 128;

/// `text` safe to print on a terminal: at most `max` characters, every control character and
/// every invisible formatting character (bidirectional overrides, zero-width ones) written as
/// its `\u{…}` escape, so nothing from a job's stack is ever interpreted.
pub fn printable(text: &str, max: usize) -> String {
    let mut out = String::new();
    for c in text.chars().take(max) {
        // A line break too: a name from a job's stack is one line.
        if c.is_control() || crate::format::is_unsafe(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// `train.py:87 collate`: a frame's file by its last two path parts, its line and function.
pub fn short_label(path: &str, line: u64, function: &str) -> String {
    let mut parts = path.rsplit('/');
    let name = parts.next().unwrap_or_default();
    let file = match parts.next() {
        Some(dir) if !dir.is_empty() && path.matches('/').count() > 1 => format!("{dir}/{name}"),
        _ => path.to_string(),
    };
    format!("{file}:{line} {function}")
}
