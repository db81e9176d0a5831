//! Recordings: NDJSON, a header line (`gpumon.recording/4`, the machine, the interval) and one
//! `Sample` per line. `gpumon record` writes them, `--replay` and `--demo` read them.
//!
//! Version 2 adds each process's allocator-probe `pool` and the samples' `notices`; version 1
//! files (without them) still read, their pools "not recorded".

use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};

use crate::sample::{MachineInfo, Sample};

pub mod file;
pub mod zst;

pub const SCHEMA: &str = "gpumon.recording/4";
/// Earlier versions this gpumon still reads.
pub const OLDER: &[&str] = &[
    "gpumon.recording/3",
    "gpumon.recording/2",
    "gpumon.recording/1",
];

/// A header cut off: nothing before it to replay.
const HEADER_CUT: &str =
    "cut off mid-line (was the recording interrupted?): not even its header is whole";

/// Lines longer than this are refused rather than read into memory.
pub const MAX_LINE: usize = 16 << 20;

/// The longest sampling interval a recording may declare (`--interval` allows at most 1h).
pub const MAX_INTERVAL_MS: u64 = 3_600_000;

/// The first line of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    pub schema: String,
    pub gpumon_version: String,
    pub machine: MachineInfo,
    pub interval_ms: u64,
}

impl Header {
    pub fn new(machine: MachineInfo, interval_ms: u64) -> Self {
        Header {
            schema: SCHEMA.to_string(),
            gpumon_version: env!("CARGO_PKG_VERSION").to_string(),
            machine,
            interval_ms,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    #[error("{name}: empty file, not a gpumon recording")]
    Empty { name: String },
    #[error("{name}: line {line}: {what}")]
    Line {
        name: String,
        line: usize,
        what: String,
    },
    #[error("{name}: {source}")]
    Io {
        name: String,
        #[source]
        source: std::io::Error,
    },
}

/// Reads a recording line by line, naming the line of any fault. A recording cut off (its
/// writer killed mid-line, or a compressed stream mid-frame) ends at its last whole line, and
/// [`Reader::cut_off`] says where; a bad line before the end is an error.
pub struct Reader<R> {
    name: String,
    input: R,
    line: usize,
    buf: Vec<u8>,
    /// The line just read ended at the end of the input without a newline.
    cut: bool,
    /// The line the input was cut off in.
    cut_at: Option<usize>,
}

/// What is said of a recording cut off at `line`: the replay stopped before it.
pub fn cut_notice(name: &str, line: usize) -> String {
    format!(
        "{name} is cut off at line {line} (was the recording interrupted?): replayed up to the \
         last whole line before it"
    )
}

impl<R: BufRead> Reader<R> {
    /// Reads and checks the header.
    pub fn open(name: impl Into<String>, input: R) -> Result<(Header, Self), RecordingError> {
        let mut reader = Reader {
            name: name.into(),
            input,
            line: 0,
            buf: Vec::new(),
            cut: false,
            cut_at: None,
        };
        let Some(text) = reader.next_line()? else {
            if reader.cut_at.is_some() {
                return Err(reader.bad(HEADER_CUT));
            }
            return Err(RecordingError::Empty { name: reader.name });
        };
        let probe: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| reader.json_fault(&e))?;
        match probe.get("schema").and_then(|s| s.as_str()) {
            Some(s) if s == SCHEMA || OLDER.contains(&s) => {}
            Some(other) => {
                return Err(reader.bad(format!(
                    "schema {other:?} is not supported (this gpumon reads {SCHEMA} and {})",
                    OLDER.join(", ")
                )));
            }
            None => return Err(reader.bad("no \"schema\" field: not a gpumon recording")),
        }
        let header: Header = serde_json::from_value(probe).map_err(|e| reader.json_fault(&e))?;
        if !(1..=MAX_INTERVAL_MS).contains(&header.interval_ms) {
            return Err(reader.bad(format!(
                "interval_ms {} is out of range (1 to {MAX_INTERVAL_MS})",
                header.interval_ms
            )));
        }
        Ok((header, reader))
    }

    /// The next sample, `None` at the end (or at a line cut off at the end).
    pub fn next_sample(&mut self) -> Result<Option<Sample>, RecordingError> {
        let Some(text) = self.next_line()? else {
            return Ok(None);
        };
        match serde_json::from_str(&text) {
            Ok(sample) => Ok(Some(sample)),
            Err(e) if self.cut && e.is_eof() => {
                self.cut_at = Some(self.line);
                Ok(None)
            }
            Err(e) => Err(self.json_fault(&e)),
        }
    }

    /// The line the recording was cut off in, once the reader has reached it.
    pub fn cut_off(&self) -> Option<usize> {
        self.cut_at
    }

    /// A fault of the current line; control characters the file put in the message (a field
    /// name with a newline or a terminal escape) are escaped, so it stays one harmless line.
    fn bad(&self, what: impl std::fmt::Display) -> RecordingError {
        let mut text = String::new();
        for c in what.to_string().chars() {
            if c.is_control() {
                text.extend(c.escape_default());
            } else {
                text.push(c);
            }
        }
        RecordingError::Line {
            name: self.name.clone(),
            line: self.line,
            what: text,
        }
    }

    /// A JSON fault of the current line: serde's "at line 1" is the line's own numbering, so
    /// only the column is kept; a header cut off at the end of the file says so.
    fn json_fault(&self, e: &serde_json::Error) -> RecordingError {
        if self.cut && e.is_eof() {
            return self.bad(HEADER_CUT);
        }
        let text = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        match text.strip_suffix(&suffix) {
            Some(what) => self.bad(format!("{what} (column {})", e.column())),
            None => self.bad(text),
        }
    }

    /// The next non-blank line as text; bounded in size, UTF-8 checked. A compressed stream cut
    /// off mid-frame ends here, in the line it was cut in.
    fn next_line(&mut self) -> Result<Option<String>, RecordingError> {
        if self.cut_at.is_some() {
            return Ok(None);
        }
        loop {
            self.buf.clear();
            self.line += 1;
            let read = std::io::Read::take(&mut self.input, MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut self.buf);
            let n = match read {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                    self.cut_at = Some(self.line);
                    return Ok(None);
                }
                Err(source) => {
                    return Err(RecordingError::Io {
                        name: self.name.clone(),
                        source,
                    });
                }
            };
            if n == 0 {
                return Ok(None);
            }
            self.cut = !self.buf.ends_with(b"\n");
            if self.buf.len() > MAX_LINE && !self.buf.ends_with(b"\n") {
                return Err(self.bad(format!("line longer than {} MiB", MAX_LINE >> 20)));
            }
            let text = match std::str::from_utf8(&self.buf) {
                Ok(text) => text.trim(),
                // A line cut inside a character: the end of the recording, if not its header.
                Err(_) if self.cut && self.line > 1 => {
                    self.cut_at = Some(self.line);
                    return Ok(None);
                }
                Err(e) => return Err(self.bad(format!("not UTF-8 text ({e})"))),
            };
            if !text.is_empty() {
                return Ok(Some(text.to_string()));
            }
        }
    }
}

/// Writes a recording; each line is flushed so a crash loses at most the line being written.
pub struct Writer<W: Write> {
    out: W,
}

impl<W: Write> Writer<W> {
    pub fn new(mut out: W, header: &Header) -> std::io::Result<Self> {
        write_line(&mut out, header)?;
        Ok(Writer { out })
    }

    pub fn sample(&mut self, sample: &Sample) -> std::io::Result<()> {
        write_line(&mut self.out, sample)
    }
}

impl<W: Write> Writer<file::Output<W>> {
    /// Writes what the output still holds (a compressed file's last frame).
    pub fn finish(&mut self) -> std::io::Result<()> {
        self.out.finish()
    }
}

fn write_line(out: &mut impl Write, value: &impl Serialize) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    line.push(b'\n');
    out.write_all(&line)?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> MachineInfo {
        MachineInfo {
            host: "h".into(),
            kernel: None,
            driver_version: Some("580.159.04".into()),
            nvml_version: None,
            cuda_version: Some("13.0".into()),
            no_gpu: None,
        }
    }

    fn read_all(text: &[u8]) -> Result<Vec<Sample>, RecordingError> {
        let (_, mut r) = Reader::open("t.ndjson", text)?;
        let mut out = Vec::new();
        while let Some(s) = r.next_sample()? {
            out.push(s);
        }
        Ok(out)
    }

    #[test]
    fn round_trip() {
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf, &Header::new(machine(), 1000)).unwrap();
        let s = Sample {
            at_ms: 5,
            gpus: vec![],
            ..Default::default()
        };
        w.sample(&s).unwrap();
        assert_eq!(read_all(&buf).unwrap(), vec![s]);
    }

    #[test]
    fn bad_line_names_its_number() {
        let mut buf = Vec::new();
        Writer::new(&mut buf, &Header::new(machine(), 1000)).unwrap();
        buf.extend_from_slice(
            b"{\"at_ms\": 1, \"gpus\": [], \"processes\": []}\n{\"at_ms\": \"x\"}\n",
        );
        let err = read_all(&buf).unwrap_err().to_string();
        assert!(err.starts_with("t.ndjson: line 3:"), "{err}");
    }

    #[test]
    fn empty_and_foreign_files_are_refused() {
        assert!(matches!(read_all(b""), Err(RecordingError::Empty { .. })));
        let err = read_all(b"{\"schema\": \"gpumon.recording/9\"}\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not supported"), "{err}");
        let err = read_all(b"\xff\xfe\n").unwrap_err().to_string();
        assert!(err.contains("line 1: not UTF-8"), "{err}");
    }

    #[test]
    fn control_characters_from_the_file_are_escaped() {
        let mut buf = Vec::new();
        Writer::new(&mut buf, &Header::new(machine(), 1000)).unwrap();
        buf.extend_from_slice(b"{\"at_ms\": \"a\\nb\\u001b[2J\"}\n");
        let err = read_all(&buf).unwrap_err().to_string();
        assert!(err.contains("string \"a\\nb\\u{1b}[2J\""), "{err}");
        assert!(!err.chars().any(char::is_control), "{err}");
    }

    #[test]
    fn json_faults_name_the_column_and_a_cut_off_line_ends_the_recording() {
        let mut buf = Vec::new();
        Writer::new(&mut buf, &Header::new(machine(), 1000)).unwrap();
        let mut typed = buf.clone();
        typed.extend_from_slice(b"{\"at_ms\": \"x\"}\n");
        let err = read_all(&typed).unwrap_err().to_string();
        assert!(err.starts_with("t.ndjson: line 2: invalid type"), "{err}");
        assert!(
            err.ends_with("(column 13)") && !err.contains("line 1"),
            "{err}"
        );
        let header = buf.clone();
        buf.extend_from_slice(
            b"{\"at_ms\": 1, \"gpus\": [], \"processes\": []}\n{\"at_ms\": 2, \"gpus\": [",
        );
        let (_, mut r) = Reader::open("t.ndjson", buf.as_slice()).unwrap();
        assert!(r.next_sample().unwrap().is_some());
        assert_eq!(r.cut_off(), None);
        assert!(r.next_sample().unwrap().is_none());
        assert_eq!(r.cut_off(), Some(3));
        assert!(r.next_sample().unwrap().is_none(), "and stays ended");
        // A whole last line without its newline is a sample; a bad one is an error.
        let mut last = header.clone();
        last.extend_from_slice(b"{\"at_ms\": 1, \"gpus\": [], \"processes\": []}");
        assert_eq!(read_all(&last).unwrap().len(), 1);
        last.truncate(header.len());
        last.extend_from_slice(b"{\"at_ms\": \"x\"}");
        assert!(
            read_all(&last)
                .unwrap_err()
                .to_string()
                .contains("line 2: invalid type")
        );
        // A header cut off leaves nothing to replay.
        let err = read_all(&header[..20]).unwrap_err().to_string();
        assert!(
            err.starts_with("t.ndjson: line 1: cut off mid-line"),
            "{err}"
        );
    }
}
