//! Recordings on disk: plain NDJSON, or zstd-compressed when the name ends in `.zst`, written
//! through an `Output` that compresses when asked; the time of the last sample found in the end of
//! a plain file (`infile` reads them, whatever their name).

use std::io::{self, Write};
use std::path::Path;

use super::zst;

/// Whether the file is (to be) zstd-compressed: its name ends in `.zst`.
pub fn is_zst(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "zst")
}

/// The `at_ms` of the last complete line in `tail`, the end of a recording (`whole`: all of
/// it). Only whole lines count: after the first newline unless `whole`, up to the last one (a
/// cut-off last line is left out).
pub fn tail_at_ms(tail: &[u8], whole: bool) -> Option<u64> {
    #[derive(serde::Deserialize)]
    struct At {
        at_ms: u64,
    }
    let end = tail.iter().rposition(|b| *b == b'\n')?;
    let tail = &tail[..end];
    let start = match tail.iter().rposition(|b| *b == b'\n') {
        Some(i) => i + 1,
        None if whole => 0,
        None => return None,
    };
    let at: At = serde_json::from_slice(&tail[start..]).ok()?;
    Some(at.at_ms)
}

/// Where a recording is written: the file itself, or a zstd encoder in front of it.
pub enum Output<W: Write> {
    Plain(W),
    Zstd(zst::Encoder<W>),
}

impl<W: Write> Output<W> {
    /// Compressed when `path` ends in `.zst` (a frame every `zst::FRAME_MS` of samples).
    pub fn new(out: W, path: &Path, interval_ms: u64) -> Self {
        if is_zst(path) {
            Output::Zstd(zst::Encoder::new(out, interval_ms))
        } else {
            Output::Plain(out)
        }
    }

    /// Writes what is still pending (the last zstd frame) and flushes.
    pub fn finish(&mut self) -> io::Result<()> {
        match self {
            Output::Plain(w) => w.flush(),
            Output::Zstd(z) => z.finish(),
        }
    }
}

impl<W: Write> Write for Output<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Output::Plain(w) => w.write(buf),
            Output::Zstd(z) => z.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Output::Plain(w) => w.flush(),
            Output::Zstd(z) => z.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_complete_line_gives_the_time() {
        let whole = b"{\"schema\": 1}\n{\"at_ms\": 5}\n{\"at_ms\": 9, \"gpus\": []}\n";
        assert_eq!(tail_at_ms(whole, true), Some(9));
        let cut = b"{\"schema\": 1}\n{\"at_ms\": 5}\n{\"at_ms\": 9, \"gp";
        assert_eq!(tail_at_ms(cut, true), Some(5), "a cut-off line is left out");
        assert_eq!(tail_at_ms(b"", true), None);
        assert_eq!(
            tail_at_ms(b"{\"at_ms\": 5}\n", false),
            None,
            "no whole line in the tail"
        );
    }
}
