//! Recordings on disk: plain NDJSON, or zstd-compressed when the name ends in `.zst`; opened as a
//! stream of lines, written through an `Output` that compresses when asked; the time of the last
//! sample read cheaply from the end of a plain file.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::zst;

/// The tail of a plain recording read to find its last sample's time.
const TAIL: u64 = 1 << 20;

/// Whether the file is (to be) zstd-compressed: its name ends in `.zst`.
pub fn is_zst(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "zst")
}

/// The recording's lines, decompressed when the name ends in `.zst`.
pub fn open(path: &Path) -> io::Result<Box<dyn BufRead + Send>> {
    let file = BufReader::new(File::open(path)?);
    Ok(if is_zst(path) {
        Box::new(BufReader::new(zst::Decoder::new(file)))
    } else {
        Box::new(file)
    })
}

/// The `at_ms` of the last complete line of a plain recording, read from its last MiB; `None`
/// for a compressed file (it would have to be decompressed whole) or when there is none.
pub fn last_at_ms(path: &Path) -> Option<u64> {
    if is_zst(path) {
        return None;
    }
    let mut file = File::open(path).ok()?;
    let len = file.seek(SeekFrom::End(0)).ok()?;
    let from = len.saturating_sub(TAIL);
    file.seek(SeekFrom::Start(from)).ok()?;
    let mut tail = Vec::new();
    file.take(TAIL).read_to_end(&mut tail).ok()?;
    tail_at_ms(&tail, from == 0)
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
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.ndjson");
        let write = |text: &str| std::fs::write(&path, text).unwrap();
        write("{\"schema\": 1}\n{\"at_ms\": 5}\n{\"at_ms\": 9, \"gpus\": []}\n");
        assert_eq!(last_at_ms(&path), Some(9));
        write("{\"schema\": 1}\n{\"at_ms\": 5}\n{\"at_ms\": 9, \"gp");
        assert_eq!(last_at_ms(&path), Some(5), "a cut-off line is left out");
        write("");
        assert_eq!(last_at_ms(&path), None);
        write(&format!("{}\n", "x".repeat(TAIL as usize + 10)));
        assert_eq!(last_at_ms(&path), None, "no whole line in the tail");
        assert_eq!(last_at_ms(&dir.path().join("r.ndjson.zst")), None);
    }
}
