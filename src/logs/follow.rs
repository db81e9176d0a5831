//! One followed file, like `tail -F`: survives truncation, rotation (a new inode at the path),
//! a file that appears later, and deletion (the open handle is read to its end). Each poll looks
//! at its length before reading (`when::Marks`), so every line is fed with when it reached the
//! disk, and what is left unread is its backlog.

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::PathBuf;
use std::time::Instant;

use super::lines::LineSplitter;
use super::when::Marks;
use crate::oom::{OomParser, Parsed};

/// Lines of an existing file are counted up to this size when following starts at its end.
const COUNT_LINES_UP_TO: u64 = 64 << 20;
const CHUNK: usize = 64 * 1024;
/// Bytes before the read position remembered to notice a file truncated and refilled past it.
const TAIL: usize = 64;

/// (device, inode): a file's identity.
pub type FileId = (u64, u64);

/// What one poll may still read from a file: bytes, and until when (a chunk at least).
pub struct Budget {
    pub bytes: usize,
    pub until: Instant,
}

pub struct Follower {
    /// Where to look for a newer file (`--log`); `None` for a process's own fd.
    pub path: Option<PathBuf>,
    /// The name shown in failures.
    pub name: String,
    file: Option<File>,
    pub id: Option<FileId>,
    offset: u64,
    /// The last bytes before `offset`, as read.
    tail: Vec<u8>,
    lines: LineSplitter,
    parser: OomParser,
    /// Where the line being read began.
    line_start: u64,
    /// The looks at the file its unread bytes need, and its lines' zone.
    pub marks: Marks,
    /// When it was last polled.
    polled_ms: Option<u64>,
}

impl Follower {
    /// Nothing read yet.
    fn new(name: String, path: Option<PathBuf>) -> Follower {
        Follower {
            name,
            path,
            file: None,
            id: None,
            offset: 0,
            tail: Vec::new(),
            lines: LineSplitter::default(),
            parser: OomParser::new(),
            line_start: 0,
            marks: Marks::default(),
            polled_ms: None,
        }
    }

    /// Follows `path` by name from its current end (or from its start once it appears).
    pub fn by_path(path: PathBuf) -> Follower {
        let mut f = Follower::new(path.display().to_string(), Some(path.clone()));
        if let Ok(file) = File::open(&path) {
            f.attach_at_end(file);
        }
        f
    }

    /// Follows an already opened file (a process's stdout/stderr) from its current end.
    pub fn by_file(name: String, file: File) -> Follower {
        let mut f = Follower::new(name, None);
        f.attach_at_end(file);
        f
    }

    fn attach_at_end(&mut self, mut file: File) {
        let Ok(meta) = file.metadata() else { return };
        let len = meta.len();
        self.lines = LineSplitter::default();
        if len <= COUNT_LINES_UP_TO {
            let mut buf = vec![0u8; CHUNK];
            let mut seen = 0u64;
            while let Ok(n) = file.read(&mut buf) {
                if n == 0 || seen >= len {
                    break;
                }
                let n = usize::try_from((len - seen).min(n as u64)).unwrap_or(n);
                self.lines.lines += buf[..n].iter().filter(|b| **b == b'\n').count() as u64;
                seen += n as u64;
            }
        }
        if file.seek(SeekFrom::Start(len)).is_ok() {
            self.offset = len;
            self.line_start = len;
            let keep = len.min(TAIL as u64);
            self.tail = vec![0; usize::try_from(keep).unwrap_or(0)];
            if file.read_exact_at(&mut self.tail, len - keep).is_err() {
                self.tail.clear();
            }
            self.id = Some((meta.dev(), meta.ino()));
            self.file = Some(file);
        }
    }

    fn attach_at_start(&mut self, file: File, id: FileId) {
        self.file = Some(file);
        self.id = Some(id);
        self.offset = 0;
        self.line_start = 0;
        self.tail.clear();
        self.lines = LineSplitter::default();
        self.marks.restart(self.polled_ms);
    }

    /// Bytes on disk not read yet, as the last look found the file.
    pub fn behind(&self) -> u64 {
        self.marks
            .len()
            .map_or(0, |len| len.saturating_sub(self.offset))
    }

    /// Since when its first unread byte has been on disk, while it is behind.
    pub fn behind_since(&self) -> Option<u64> {
        (self.behind() > 0)
            .then(|| self.marks.waiting_since(self.offset))
            .flatten()
    }

    /// New failures, after a look at the file at `at_ms`; reads what `budget` allows (and takes
    /// it off).
    pub fn poll(&mut self, budget: &mut Budget, at_ms: u64, out: &mut Vec<Parsed>) {
        let on_disk = self
            .path
            .as_ref()
            .and_then(|p| fs::metadata(p).ok())
            .filter(fs::Metadata::is_file)
            .map(|m| (m.dev(), m.ino()));
        let mut read = self.read(budget, at_ms, out);
        match (on_disk, self.file.is_some()) {
            (Some(id), true) if Some(id) != self.id && self.at_end() => {
                // Rotated: the old file is drained; the new one is read from its start.
                self.end_of_file(out);
                self.open_new(id);
                read += self.read(budget, at_ms, out);
            }
            (Some(id), false) => {
                self.open_new(id);
                read += self.read(budget, at_ms, out);
            }
            _ => {}
        }
        if read == 0 {
            // Quiet this tick: a failure's dump is complete.
            self.parser.flush(out);
        }
        self.polled_ms = Some(at_ms);
    }

    fn open_new(&mut self, id: FileId) {
        if let Some(file) = self.path.as_ref().and_then(|p| File::open(p).ok()) {
            self.attach_at_start(file, id);
        }
    }

    fn at_end(&self) -> bool {
        self.file
            .as_ref()
            .and_then(|f| f.metadata().ok())
            .is_none_or(|m| self.offset >= m.len())
    }

    /// Completes a partial last line and any open window (the file is left for good).
    pub fn end_of_file(&mut self, out: &mut Vec<Parsed>) {
        let parser = &mut self.parser;
        let seen = self.marks.seen(self.line_start, self.offset);
        self.lines
            .finish(|no, l| parser.feed_seen(no, l, seen, out));
        parser.flush(out);
    }

    fn read(&mut self, budget: &mut Budget, at_ms: u64, out: &mut Vec<Parsed>) -> usize {
        let Some(file) = &mut self.file else { return 0 };
        let len = file.metadata().map_or(self.offset, |m| m.len());
        let mut seen = vec![0; self.tail.len()];
        let start = self.offset.saturating_sub(self.tail.len() as u64);
        let same = file.read_exact_at(&mut seen, start).is_ok() && seen == self.tail;
        if len < self.offset || !same {
            // Truncated in place (perhaps refilled past where we were): start again from the top.
            if file.seek(SeekFrom::Start(0)).is_err() {
                return 0;
            }
            self.offset = 0;
            self.line_start = 0;
            self.tail.clear();
            self.lines = LineSplitter::default();
            self.marks.restart(self.polled_ms);
        }
        self.marks.look(len, at_ms);
        let mut total = 0;
        let mut buf = vec![0u8; CHUNK.min(budget.bytes)];
        while budget.bytes > 0 && (total == 0 || Instant::now() < budget.until) {
            let want = buf.len().min(budget.bytes);
            let n = match file.read(&mut buf[..want]) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            budget.bytes -= n;
            total += n;
            let chunk_at = self.offset;
            self.offset += n as u64;
            self.tail.extend_from_slice(&buf[n.saturating_sub(TAIL)..n]);
            let drop = self.tail.len().saturating_sub(TAIL);
            self.tail.drain(..drop);
            let (parser, marks, start) = (&mut self.parser, &self.marks, &mut self.line_start);
            self.lines.push_at(&buf[..n], |no, end, l| {
                let end = chunk_at + end as u64;
                parser.feed_seen(no, l, marks.seen(*start, end), out);
                *start = end;
            });
        }
        self.marks.forget(self.line_start);
        total
    }
}
