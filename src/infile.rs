//! Every file gpumon is given (`explain`, `diff`, `snapshot --replay`, `--replay`,
//! `serve --replay`) goes through this one reader: opened once, so a pipe, a named FIFO,
//! `/dev/stdin` or `<(zcat train.log.gz)` reads like a file, and `-` is standard input;
//! decompressed when its first bytes are a gzip or zstd stream, whatever its name (gzip as `zcat`
//! reads it, trailing zeros or garbage ignored: `gz.rs`); and told by its
//! first block (kept, and read again by whoever reads the input) what it is (`sniff.rs`).

use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::recording::{file::tail_at_ms, zst};

mod gz;
mod sniff;

pub use sniff::Kind;

/// The first block: what the kind is told from, at most.
pub const BLOCK: usize = 8 * 1024;

/// The tail of a plain recording read to find its last sample's time.
const TAIL: u64 = 1 << 20;

/// How the input was stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Plain,
    Gzip,
    Zstd,
}

/// An input, open, its first block read and its kind told; [`Input::reader`] reads it all from
/// the start (decompressed).
pub struct Input {
    /// The name it was given by (`-` for standard input).
    pub name: String,
    pub kind: Kind,
    pub compression: Compression,
    reader: Box<dyn BufRead + Send>,
    /// A plain regular file, and its length: read again at an offset (never by reopening) for
    /// the time of its last line.
    file: Option<(File, u64)>,
}

impl std::fmt::Debug for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Input")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("compression", &self.compression)
            .finish_non_exhaustive()
    }
}

impl Input {
    /// Opens `path` (`-`: standard input) and reads its first block.
    pub fn open(path: &Path) -> io::Result<Input> {
        let name = path.display().to_string();
        if path == Path::new("-") {
            return Self::read(name, Box::new(io::stdin()), None);
        }
        let file = File::open(path)?;
        let meta = file.metadata()?;
        let kept = if meta.is_file() {
            Some((file.try_clone()?, meta.len()))
        } else {
            None
        };
        Self::read(name, Box::new(file), kept)
    }

    /// An input read from `raw` (a test's bytes, a pipe), named `name`.
    pub fn from_reader(
        name: impl Into<String>,
        raw: impl Read + Send + 'static,
    ) -> io::Result<Self> {
        Self::read(name.into(), Box::new(raw), None)
    }

    fn read(
        name: String,
        raw: Box<dyn Read + Send>,
        file: Option<(File, u64)>,
    ) -> io::Result<Input> {
        let mut raw = BufReader::new(raw);
        let (magic, _) = fill(&mut raw, 4, |_| false).map_err(|f| f.error)?;
        let compression = match magic.as_slice() {
            [0x1f, 0x8b, ..] => Compression::Gzip,
            [0x28, 0xb5, 0x2f, 0xfd] => Compression::Zstd,
            // A skippable frame (zstd's, which `zstd` may put first).
            [0x50..=0x5f, 0x2a, 0x4d, 0x18] => Compression::Zstd,
            _ => Compression::Plain,
        };
        let raw = Cursor::new(magic).chain(raw);
        let mut stream: Box<dyn BufRead + Send> = match compression {
            Compression::Plain => Box::new(raw),
            Compression::Gzip => Box::new(BufReader::new(gz::Members::new(&name, raw))),
            Compression::Zstd => Box::new(BufReader::new(zst::Decoder::new(raw))),
        };
        let (head, ended, fault) = match fill(&mut stream, BLOCK, enough) {
            Ok((head, ended)) => (head, ended, None),
            // A compressed stream damaged or cut off after its first bytes: those are read, and
            // whoever reads on meets the fault where it is.
            Err(Fault { head, error }) if !head.is_empty() => (head, false, Some(error)),
            Err(Fault { error, .. }) if error.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(io::Error::new(
                    error.kind(),
                    format!(
                        "{error}: nothing before the cut could be read (a compressed block is \
                         read whole, and the first one is not)"
                    ),
                ));
            }
            Err(Fault { error, .. }) => return Err(error),
        };
        let kind = sniff::kind(&head, ended);
        Ok(Input {
            name,
            kind,
            compression,
            reader: Box::new(Rewound {
                head: Cursor::new(head),
                fault,
                rest: stream,
            }),
            file: file.filter(|_| compression == Compression::Plain),
        })
    }

    /// The whole input from its start, decompressed.
    pub fn reader(self) -> Box<dyn BufRead + Send> {
        self.reader
    }

    /// The length of a plain regular file (`None` for a pipe or a compressed file).
    pub fn size(&self) -> Option<u64> {
        self.file.as_ref().map(|(_, len)| *len)
    }

    /// The `at_ms` of the last whole line of a plain recording on disk, read from its last MiB;
    /// `None` for a pipe or a compressed file (it would have to be read whole).
    pub fn last_at_ms(&self) -> Option<u64> {
        let (file, len) = self.file.as_ref()?;
        let from = len.saturating_sub(TAIL);
        let mut tail = vec![0; usize::try_from(len - from).ok()?];
        file.read_exact_at(&mut tail, from).ok()?;
        tail_at_ms(&tail, from == 0)
    }
}

/// Enough of the first block to tell the kind: a whole first line, unless it opens a JSON
/// document over several lines (`{` alone), which needs the block.
fn enough(head: &[u8]) -> bool {
    let Some(start) = head.iter().position(|b| !b.is_ascii_whitespace()) else {
        return false;
    };
    match head[start..].iter().position(|b| *b == b'\n') {
        Some(end) => !matches!(head[start..start + end].trim_ascii(), b"{" | b"["),
        None => false,
    }
}

/// A read that failed after `head`.
struct Fault {
    head: Vec<u8>,
    error: io::Error,
}

/// Reads up to `max` bytes, stopping early at the end of the input (then `true` with them) or
/// once `done` says so (a pipe's writer may be slow: what it wrote so far may be enough).
fn fill(
    input: &mut impl Read,
    max: usize,
    done: impl Fn(&[u8]) -> bool,
) -> Result<(Vec<u8>, bool), Fault> {
    let mut head = vec![0; max];
    let (mut n, mut ended) = (0, false);
    while n < max && !done(&head[..n]) {
        match input.read(&mut head[n..]) {
            Ok(0) => {
                ended = true;
                break;
            }
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => {
                head.truncate(n);
                return Err(Fault { head, error });
            }
        }
    }
    head.truncate(n);
    Ok((head, ended))
}

/// The first block again, then a fault met while reading it (if any), then the rest.
struct Rewound {
    head: Cursor<Vec<u8>>,
    fault: Option<io::Error>,
    rest: Box<dyn BufRead + Send>,
}

impl Read for Rewound {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = {
            let mut avail = self.fill_buf()?;
            avail.read(buf)?
        };
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Rewound {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if (self.head.position() as usize) < self.head.get_ref().len() {
            return self.head.fill_buf();
        }
        if let Some(e) = self.fault.take() {
            return Err(e);
        }
        self.rest.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        if (self.head.position() as usize) < self.head.get_ref().len() {
            self.head.consume(amt);
        } else {
            self.rest.consume(amt);
        }
    }
}

#[cfg(test)]
mod tests;
