//! One followed file, like `tail -F`: survives truncation, rotation (a new inode at the path),
//! a file that appears later, and deletion (the open handle is read to its end).

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::PathBuf;

use super::lines::LineSplitter;
use crate::oom::{OomParser, Parsed};

/// Lines of an existing file are counted up to this size when following starts at its end.
const COUNT_LINES_UP_TO: u64 = 64 << 20;
const CHUNK: usize = 64 * 1024;
/// Bytes before the read position remembered to notice a file truncated and refilled past it.
const TAIL: usize = 64;

/// (device, inode): a file's identity.
pub type FileId = (u64, u64);

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
        self.tail.clear();
        self.lines = LineSplitter::default();
    }

    /// New failures; reads at most `budget` bytes (and takes them off it).
    pub fn poll(&mut self, budget: &mut usize, out: &mut Vec<Parsed>) {
        let on_disk = self
            .path
            .as_ref()
            .and_then(|p| fs::metadata(p).ok())
            .filter(fs::Metadata::is_file)
            .map(|m| (m.dev(), m.ino()));
        let mut read = self.read(budget, out);
        match (on_disk, self.file.is_some()) {
            (Some(id), true) if Some(id) != self.id && self.at_end() => {
                // Rotated: the old file is drained; the new one is read from its start.
                self.end_of_file(out);
                self.open_new(id);
                read += self.read(budget, out);
            }
            (Some(id), false) => {
                self.open_new(id);
                read += self.read(budget, out);
            }
            _ => {}
        }
        if read == 0 {
            // Quiet this tick: a failure's dump is complete.
            self.parser.flush(out);
        }
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
        self.lines.finish(|no, l| parser.feed(no, l, out));
        parser.flush(out);
    }

    fn read(&mut self, budget: &mut usize, out: &mut Vec<Parsed>) -> usize {
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
            self.tail.clear();
            self.lines = LineSplitter::default();
        }
        let mut total = 0;
        let mut buf = vec![0u8; CHUNK.min(*budget)];
        while *budget > 0 {
            let want = buf.len().min(*budget);
            let n = match file.read(&mut buf[..want]) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            *budget -= n;
            total += n;
            self.offset += n as u64;
            self.tail.extend_from_slice(&buf[n.saturating_sub(TAIL)..n]);
            let drop = self.tail.len().saturating_sub(TAIL);
            self.tail.drain(..drop);
            let parser = &mut self.parser;
            self.lines.push(&buf[..n], |no, l| parser.feed(no, l, out));
        }
        total
    }
}
