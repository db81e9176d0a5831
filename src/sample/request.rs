//! What gpumon may ask a probe (docs/memory-map-format.md, `gpumon.request/1`): a fixed set of
//! verbs, an id that says why it asked, and the one line a request file holds. Writing it is I/O,
//! done by `source::probe::request`; the screen only says what to ask.

/// What gpumon may ask a probe: a fixed set, nothing else is ever written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// Write `<pid>.map.json` now.
    Map,
    RecordOn,
    RecordOff,
    /// Write the framework's own full snapshot (PyTorch pickle, JAX pprof).
    Export,
    /// Say where the main thread is now (`where` in `<pid>.json`, `asked`).
    Where,
}

impl Verb {
    pub fn word(self) -> &'static str {
        match self {
            Verb::Map => "map",
            Verb::RecordOn => "record-on",
            Verb::RecordOff => "record-off",
            Verb::Export => "export",
            Verb::Where => "where",
        }
    }
}

/// Why gpumon asked; the last digit of a request's id says it, so the map that answers a request
/// made during an alert is told apart from one a person asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    Person = 1,
    Alert = 2,
}

/// A request's id: the time it was made, then its purpose's digit.
pub fn request_id(now_ms: u64, purpose: Purpose) -> u64 {
    now_ms.saturating_mul(10).saturating_add(purpose as u64)
}

pub fn purpose_of(id: u64) -> Purpose {
    if id % 10 == Purpose::Alert as u64 {
        Purpose::Alert
    } else {
        Purpose::Person
    }
}

/// One request for one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ask {
    pub pid: u32,
    /// Its start time as gpumon knows it; the probe file must agree (a reused PID is refused).
    pub start_time: Option<u64>,
    pub verb: Verb,
    pub id: u64,
}

impl Ask {
    /// The request file's one line.
    pub fn line(&self) -> String {
        format!("gpumon.request/1 {} {}\n", self.verb.word(), self.id)
    }
}
