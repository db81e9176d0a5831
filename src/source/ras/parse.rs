//! RAS's JSON answer (NCCL >= 2.28.7, `docs/userguide/.../ras.rst` in NVIDIA/nccl): per
//! communicator its `hash`, `size`, `ranks` (`rank`, `host`, `pid`, `cuda_dev`, `nvml_dev`,
//! `status`, `collective_counts`) and `missing_ranks`. The service writes a text line before
//! the document ("Gathering data about the NCCL communicators…"): the document is the first
//! JSON object in the answer. Fields it lacks are left absent; unknown ones are skipped; every
//! string is made printable and short.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::sample::job::printable;
use crate::sample::{RasComm, RasRank, RasStatus};

/// Longest string kept from the answer (a host, a version, an operation's name).
const MAX_TEXT: usize = 64;
/// Operations kept a rank (NCCL has 6).
const MAX_OPS: usize = 32;

#[derive(Deserialize)]
struct Doc {
    #[serde(default)]
    nccl_version: Option<String>,
    communicators: Vec<Comm>,
}

#[derive(Deserialize)]
struct Comm {
    hash: String,
    #[serde(default)]
    size: Option<i64>,
    #[serde(default)]
    ranks: Vec<Rank>,
    #[serde(default)]
    missing_ranks: Vec<Rank>,
}

#[derive(Deserialize)]
struct Rank {
    rank: i64,
    #[serde(default)]
    host: Option<String>,
    #[serde(default)]
    pid: Option<i64>,
    #[serde(default)]
    cuda_dev: Option<i64>,
    #[serde(default)]
    nvml_dev: Option<i64>,
    #[serde(default)]
    status: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    collective_counts: BTreeMap<String, serde_json::Value>,
}

/// The status in `answer`, read at `at_ms`; what is wrong with it, in words.
pub fn json(answer: &str, at_ms: u64) -> Result<RasStatus, String> {
    let start = answer.find('{').ok_or("no JSON document")?;
    let doc: Doc = serde_json::Deserializer::from_str(&answer[start..])
        .into_iter()
        .next()
        .ok_or("no JSON document")?
        .map_err(|e| format!("bad JSON: {e}"))?;
    Ok(RasStatus {
        at_ms,
        nccl_version: doc.nccl_version.map(|v| printable(&v, MAX_TEXT)),
        comms: doc.communicators.into_iter().map(comm).collect(),
    })
}

fn comm(c: Comm) -> RasComm {
    RasComm {
        id: hash_id(&c.hash),
        size: c.size.and_then(|n| u32::try_from(n).ok()),
        ranks: c.ranks.into_iter().filter_map(rank).collect(),
        missing_ranks: c.missing_ranks.into_iter().filter_map(rank).collect(),
        most: BTreeMap::new(),
        said: Vec::new(),
    }
}

/// A communicator's hash as 16 lowercase hex digits (`0xae94…` in JSON, `ae94…` in text); a
/// value that is no hex number is kept printable as it came.
pub fn hash_id(hash: &str) -> String {
    let digits = hash.trim().trim_start_matches("0x");
    match u64::from_str_radix(digits, 16) {
        Ok(n) => format!("{n:016x}"),
        Err(_) => printable(hash, MAX_TEXT),
    }
}

/// A number that fits, or `None` (RAS writes -1 for what it did not know).
fn id(n: Option<i64>) -> Option<u32> {
    n.and_then(|n| u32::try_from(n).ok())
}

fn rank(r: Rank) -> Option<RasRank> {
    let mut status = Vec::new();
    for (word, v) in &r.status {
        let word = printable(word, MAX_TEXT);
        match v {
            serde_json::Value::Bool(true) => status.push(word),
            serde_json::Value::Number(n) if n.as_i64() != Some(0) => {
                status.push(format!("{word} {n}"));
            }
            _ => {}
        }
    }
    let collectives = r
        .collective_counts
        .iter()
        .filter_map(|(op, n)| Some((printable(op, MAX_TEXT), n.as_u64()?)))
        .take(MAX_OPS)
        .collect();
    Some(RasRank {
        rank: u32::try_from(r.rank).ok()?,
        host: r
            .host
            .filter(|h| !h.is_empty() && h != "unknown")
            .map(|h| printable(&h, MAX_TEXT)),
        pid: id(r.pid),
        cuda_dev: id(r.cuda_dev),
        nvml_dev: id(r.nvml_dev),
        status,
        collectives,
    })
}
