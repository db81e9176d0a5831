//! A probed process's pool block by block, and the code that holds it (`gpumon.map/1`,
//! docs/memory-map-format.md), plus what its probe says besides its figures: the answer to the
//! last request gpumon wrote it, and whether it records allocation history.
//!
//! A sample carries these as [`ProbeNews`] only when something changed (a new map, a new answer,
//! recording turned on or off), so a recording holds each map once. File and function names come
//! from someone else's process: every string of a site is made printable when it is read
//! ([`printable`]), whichever way it arrives (a probe's file, a recording, a snapshot).

use serde::{Deserialize, Deserializer, Serialize};

use super::Framework;

/// What a probe said besides its figures, carried in a sample when it changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeNews {
    pub pid: u32,
    pub start_time: u64,
    /// The last request the probe took (repeated while it is the last: compare its id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<ProbeAnswer>,
    /// Allocation history; `None` where no framework that can record is loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recording: Option<AllocRecording>,
    /// A map that appeared since the last sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map: Option<Box<PoolMap>>,
}

/// The probe's answer to a request (`answer` in `<pid>.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeAnswer {
    pub id: u64,
    #[serde(deserialize_with = "printable_verb")]
    pub verb: String,
    pub ok: bool,
    /// The export's file name, or why the request was refused (one line).
    #[serde(deserialize_with = "printable_detail")]
    pub detail: String,
}

/// Whether the process records its allocation history (`recording` in `<pid>.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocRecording {
    pub on: bool,
    pub max_entries: u64,
    #[serde(deserialize_with = "printable_verb")]
    pub stacks: String,
    #[serde(default)]
    pub since_ms: Option<u64>,
    #[serde(default, deserialize_with = "printable_reason")]
    pub reason: Option<String>,
}

/// Why a map was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MapReason {
    /// Someone asked (a key, `gpumon snapshot --export`).
    Request,
    /// At an out-of-memory error, by PyTorch's OOM observer.
    Oom,
    /// gpumon asked while a leak or fragmentation alert on the process was active.
    Alert,
    Start,
}

impl MapReason {
    pub fn word(self) -> &'static str {
        match self {
            MapReason::Request => "asked for",
            MapReason::Oom => "at the OOM",
            MapReason::Alert => "during an alert",
            MapReason::Start => "at start",
        }
    }
}

/// One map of a process's pools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolMap {
    pub pid: u32,
    pub start_time: u64,
    pub at_ms: u64,
    pub reason: MapReason,
    #[serde(default)]
    pub request_id: Option<u64>,
    /// What taking and summarising it cost the job, µs.
    pub took_us: u64,
    #[serde(default)]
    pub oom: Option<MapOom>,
    pub frameworks: Vec<MapFramework>,
}

/// The failing request, as PyTorch's OOM observer got it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapOom {
    pub device: u32,
    pub request: u64,
    #[serde(default)]
    pub device_allocated: Option<u64>,
    #[serde(default)]
    pub device_free: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapFramework {
    #[serde(rename = "name")]
    pub framework: Framework,
    #[serde(default, deserialize_with = "printable_reason")]
    pub version: Option<String>,
    #[serde(default, deserialize_with = "printable_reason")]
    pub error: Option<String>,
    pub devices: Vec<MapDevice>,
}

/// One framework's pool on one device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapDevice {
    pub index: u32,
    #[serde(default)]
    pub uuid: Option<String>,
    pub allocated: Option<u64>,
    pub reserved: Option<u64>,
    pub free: Option<u64>,
    pub largest_free: Option<u64>,
    /// Free memory by hole size, smallest bucket first.
    pub holes: Option<Vec<Holes>>,
    /// The segments in address order; `None` where the framework gives no block map.
    pub segments: Option<Vec<Segment>>,
    #[serde(default, deserialize_with = "printable_reason")]
    pub segments_reason: Option<String>,
    /// How many segments the pool has; `None` where the framework gives no block map (a JAX,
    /// CuPy or TensorFlow map writes null).
    #[serde(default)]
    pub segments_total: Option<u64>,
    #[serde(default)]
    pub elided: Option<Elided>,
    /// The code that holds the memory, most bytes first.
    pub sites: Option<Vec<Site>>,
    #[serde(default, deserialize_with = "printable_reason")]
    pub sites_reason: Option<String>,
    /// Sites of the allocated blocks in segments that also hold free blocks.
    #[serde(default)]
    pub stranding_sites: Option<Vec<Site>>,
    #[serde(default)]
    pub unattributed: Option<Unattributed>,
    #[serde(default)]
    pub shapes: Option<Vec<Shape>>,
    /// CuPy: free blocks in its pool.
    #[serde(default)]
    pub free_blocks: Option<u64>,
}

/// One hole-size bucket: holes below `upper` bytes (`None`: the rest), how many, their bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holes(pub Option<u64>, pub u64, pub u64);

/// A segment the pool got from CUDA.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    pub address: u64,
    pub size: u64,
    pub kind: SegmentKind,
    pub expandable: bool,
    /// Belongs to a private pool (CUDA graphs).
    pub private: bool,
    pub stream: u64,
    pub runs: Vec<Run>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SegmentKind {
    Large,
    Small,
}

/// Like blocks side by side: state, how many, their bytes, the largest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run(pub BlockState, pub u64, pub u64, pub u64);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BlockState {
    #[serde(rename = "a")]
    Allocated,
    #[serde(rename = "f")]
    Free,
    /// Freed, but a stream still uses it.
    #[serde(rename = "p")]
    Pending,
}

/// Segments left out of the map to keep it bounded: their sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Elided {
    pub segments: u64,
    pub allocated: u64,
    pub free: u64,
    pub bytes: u64,
}

/// A line of the job's code and the live memory allocated there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Site {
    #[serde(deserialize_with = "printable_file")]
    pub file: String,
    pub line: u64,
    #[serde(deserialize_with = "printable_function")]
    pub function: String,
    pub blocks: u64,
    pub bytes: u64,
}

impl Site {
    /// `train.py:87 collate`: the file's last two path parts, the line and the function.
    pub fn label(&self) -> String {
        let mut parts = self.file.rsplit('/');
        let name = parts.next().unwrap_or_default();
        let file = match parts.next() {
            Some(dir) if !dir.is_empty() && self.file.matches('/').count() > 1 => {
                format!("{dir}/{name}")
            }
            _ => self.file.clone(),
        };
        format!("{file}:{} {}", self.line, self.function)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unattributed {
    pub blocks: u64,
    pub bytes: u64,
}

/// JAX: live arrays of one shape and dtype.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    #[serde(deserialize_with = "printable_function")]
    pub shape: String,
    #[serde(deserialize_with = "printable_function")]
    pub dtype: String,
    pub count: u64,
    pub bytes: u64,
}

/// Longest file name kept, and function name (the contract's bounds; a longer one is cut).
pub const MAX_FILE: usize = 256;
pub const MAX_FUNCTION: usize = 128;
const MAX_REASON: usize = 300;

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

fn printable_of<'de, D: Deserializer<'de>>(d: D, max: usize) -> Result<String, D::Error> {
    Ok(printable(&String::deserialize(d)?, max))
}

fn printable_file<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    printable_of(d, MAX_FILE)
}

fn printable_function<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    printable_of(d, MAX_FUNCTION)
}

fn printable_verb<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    printable_of(d, 32)
}

fn printable_detail<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    printable_of(d, MAX_REASON)
}

fn printable_reason<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.map(|s| printable(&s, MAX_REASON)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_names_are_escaped_and_cut() {
        let s = printable("a\x1b[2Jb\nc\u{202e}d", 100);
        assert_eq!(s, "a\\u{1b}[2Jb\\u{a}c\\u{202e}d");
        assert!(!s.chars().any(char::is_control));
        assert_eq!(printable(&"x".repeat(10_000), MAX_FILE).len(), MAX_FILE);
        let site: Site = serde_json::from_str(
            r#"{"file":"/w/\u001b]0;pwned\u0007t.py","line":3,"function":"f\r\n","blocks":1,"bytes":2}"#,
        )
        .unwrap();
        assert_eq!(site.file, "/w/\\u{1b}]0;pwned\\u{7}t.py");
        assert_eq!(site.function, "f\\u{d}\\u{a}");
    }

    #[test]
    fn a_site_reads_as_its_last_two_path_parts() {
        let site = |file: &str| Site {
            file: file.into(),
            line: 87,
            function: "collate".into(),
            blocks: 1,
            bytes: 1,
        };
        assert_eq!(
            site("/home/a/proj/train.py").label(),
            "proj/train.py:87 collate"
        );
        assert_eq!(site("train.py").label(), "train.py:87 collate");
        assert_eq!(site("/train.py").label(), "/train.py:87 collate");
    }

    #[test]
    fn runs_and_holes_are_arrays_as_the_probe_writes_them() {
        let r: Run = serde_json::from_str(r#"["f", 3, 4096, 2048]"#).unwrap();
        assert_eq!(r, Run(BlockState::Free, 3, 4096, 2048));
        assert_eq!(serde_json::to_string(&r).unwrap(), r#"["f",3,4096,2048]"#);
        let h: Holes = serde_json::from_str("[null, 2, 9]").unwrap();
        assert_eq!(h, Holes(None, 2, 9));
        assert!(serde_json::from_str::<Run>(r#"["x", 1, 1, 1]"#).is_err());
    }
}
