//! The followed logs gpumon was reading behind their writers when the snapshot was taken: their
//! backlog in bytes and since when its first byte was on disk (absent when every log was caught
//! up, and in older snapshots); `/metrics` reads them as `gpumon_log_backlog_bytes`.

use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};

use crate::sample::LogBehind;

/// A log left behind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogBehindDoc {
    /// The log, as its failures name it.
    pub log: String,
    /// Bytes on disk not read yet.
    pub bytes: u64,
    /// Since when the first of them has been on disk, RFC 3339 UTC; `null`: not known.
    pub since: Option<String>,
}

pub(super) fn docs(logs: &[LogBehind]) -> Vec<LogBehindDoc> {
    logs.iter()
        .map(|l| LogBehindDoc {
            log: l.log.clone(),
            bytes: l.bytes,
            since: l.since_ms.map(super::time_ms),
        })
        .collect()
}

pub(super) fn restore(docs: &[LogBehindDoc]) -> Vec<LogBehind> {
    docs.iter()
        .map(|d| LogBehind {
            log: d.log.clone(),
            bytes: d.bytes,
            since_ms: d.since.as_deref().and_then(ms),
        })
        .collect()
}

/// Milliseconds since the epoch of an RFC 3339 time; `None` when it is not one.
fn ms(text: &str) -> Option<u64> {
    let t = humantime::parse_rfc3339_weak(text).ok()?;
    u64::try_from(t.duration_since(UNIX_EPOCH).ok()?.as_millis()).ok()
}
