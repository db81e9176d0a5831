//! Reading a snapshot back: bounded in size, and every fault is one line naming the file.

use std::io::Read;
use std::path::Path;

use super::{OLDER, SCHEMA, Snapshot, SnapshotError};

/// Larger files are refused rather than read into memory.
pub const MAX_BYTES: u64 = 256 << 20;

const FAMILY: &str = "gpumon.snapshot/";

/// Reads and checks a snapshot file.
pub fn read(path: impl AsRef<Path>) -> Result<Snapshot, SnapshotError> {
    let path = path.as_ref();
    let io = |source| SnapshotError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    if len > MAX_BYTES {
        return Err(SnapshotError::TooLarge {
            path: path.to_path_buf(),
            size: len,
        });
    }
    read_from(path, file)
}

/// Reads (at most [`MAX_BYTES`]) and checks a snapshot from `input`; `path` names it in errors.
pub fn read_from(path: &Path, input: impl Read) -> Result<Snapshot, SnapshotError> {
    let mut bytes = Vec::new();
    input
        .take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| SnapshotError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if read > MAX_BYTES {
        return Err(SnapshotError::TooLarge {
            path: path.to_path_buf(),
            size: read,
        });
    }
    parse(path, &bytes)
}

/// Checks and parses the bytes of a snapshot; `path` only names it in errors.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Snapshot, SnapshotError> {
    let path = path.to_path_buf();
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(SnapshotError::Empty { path });
    }
    // A good document is parsed once (a fleet reads one per host and interval); anything else
    // is looked at again below to say exactly what is wrong with it.
    if let Ok(s) = serde_json::from_slice::<Snapshot>(bytes)
        && (s.schema == SCHEMA || OLDER.contains(&s.schema.as_str()))
    {
        return Ok(s);
    }
    let probe: serde_json::Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => {
            return Err(SnapshotError::NotJson {
                path,
                what: one_line(&e),
            });
        }
    };
    let not_snapshot = |what: &str| SnapshotError::NotSnapshot {
        path: path.clone(),
        what: what.to_string(),
    };
    let Some(object) = probe.as_object() else {
        return Err(not_snapshot("the JSON is not an object"));
    };
    let schema = match object.get("schema") {
        None => return Err(not_snapshot("no \"schema\" field")),
        Some(serde_json::Value::String(s)) => s.as_str(),
        Some(_) => return Err(not_snapshot("\"schema\" is not a string")),
    };
    if schema != SCHEMA && !OLDER.contains(&schema) {
        let newer = schema
            .strip_prefix(FAMILY)
            .and_then(|v| v.parse::<u32>().ok())
            .is_some_and(|v| v > 2);
        if newer {
            return Err(SnapshotError::Newer {
                path,
                found: schema.to_string(),
            });
        }
        return Err(not_snapshot(&format!(
            "schema {schema:?}; this gpumon reads {SCHEMA} and {}",
            OLDER.join(", ")
        )));
    }
    // Parsed again from the bytes, so an error names its line and column.
    serde_json::from_slice(bytes).map_err(|e| SnapshotError::Invalid {
        path,
        schema: schema.to_string(),
        what: one_line(&e),
    })
}

/// One line, with any control character the file put in the message escaped.
fn one_line(e: &impl std::fmt::Display) -> String {
    let mut text = String::new();
    for c in e
        .to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
    {
        if c.is_control() {
            text.extend(c.escape_default());
        } else {
            text.push(c);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        let e = parse(Path::new("x.json"), text.as_bytes()).unwrap_err();
        let s = e.to_string();
        assert!(!s.contains('\n'), "{s}");
        assert!(s.starts_with("x.json: "), "{s}");
        s
    }

    #[test]
    fn faults_are_one_line_naming_the_file() {
        assert!(err("").contains("empty file"));
        let s = err("{\"schema\": \"gpumon.snapshot/1\", \"a\\u001b[2J\\nb\": 1}");
        assert!(
            s.contains("`a\\u{1b}[2J b`") && !s.chars().any(char::is_control),
            "{s}"
        );
        assert!(err(" \n").contains("empty file"));
        assert!(err("{").contains("not JSON"));
        assert!(err("[1]").contains("not an object"));
        assert!(err("{\"a\": 1}").contains("no \"schema\""));
        assert!(err("{\"schema\": 1}").contains("not a string"));
        assert!(err("{\"schema\": \"gpumon.recording/1\"}").contains("not a gpumon snapshot"));
        assert!(err("{\"schema\": \"gpumon.snapshot/5\"}").contains("newer"));
        let s = err("{\"schema\": \"gpumon.snapshot/1\"}");
        assert!(
            s.contains("invalid gpumon.snapshot/1 document: missing field"),
            "{s}"
        );
    }
}
