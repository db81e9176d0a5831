//! RAS's text answer (NCCL 2.24 to 2.28.6, which know no JSON): the communicators its Errors and
//! Warnings sections name (`#0-0 (b8338c39bf1d44bc) MISMATCH`), with the sentences under each
//! kept as said, and what they say of single ranks read from them: "Rank 2 has launched up to
//! operation 196 -- GPU 2 managed by process 1032 on node 10.0.0.1", the count of a group of
//! ranks ("3 ranks have launched up to operation 211"), the missing ranks of an INCOMPLETE one.
//! A communicator with nothing wrong is not in a text answer.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use regex_lite::Regex;

use super::parse::hash_id;
use crate::sample::job::printable;
use crate::sample::{RasComm, RasRank, RasStatus};

/// Longest sentence kept.
const MAX_SENTENCE: usize = 200;
/// Sentences kept a communicator.
const MAX_SAID: usize = 64;

struct Patterns {
    header: Regex,
    version: Regex,
    op: Regex,
    group: Regex,
    rank: Regex,
    whom: Regex,
    missing: Regex,
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let re = |s: &str| Regex::new(s).expect("a fixed pattern");
        Patterns {
            header: re(r"^#\d+-\d+ \(([0-9A-Fa-fx]+)\) ([A-Z]+)\s*$"),
            version: re(r"^NCCL version (\S+)"),
            op: re(r"^Communicator ranks have different (\w+) operation counts"),
            group: re(r"^(\d+) ranks have (?:launched up to operation (\d+)|not launched any)"),
            rank: re(concat!(
                r"^Rank (\d+)(?: has launched up to operation (\d+)| has (not) launched any operations",
                r"| has status (\w+)| reported ([^-]+?))? -- (.*)$"
            )),
            whom: re(r"^GPU (\d+)(?: \(NVML (\d+)\))? managed by process (\d+) on node (.+)$"),
            missing: re(r"^The missing ranks?: ([\d, ]+)$"),
        }
    })
}

/// The status in a text `answer`, read at `at_ms`; `None` when it is no RAS answer.
pub fn status(answer: &str, at_ms: u64) -> Option<RasStatus> {
    let p = patterns();
    if !answer.contains("Communicators") && !answer.contains("NCCL version") {
        return None;
    }
    let mut out = RasStatus {
        at_ms,
        nccl_version: None,
        comms: Vec::new(),
    };
    // The communicator being read, what its block is (MISMATCH, …), the operation its counts
    // are of and the count of the group whose ranks follow.
    let mut at: Option<(usize, String)> = None;
    let mut op = String::from("collective");
    let mut group: Option<u64> = None;
    for raw in answer.lines() {
        let line = raw.trim();
        if let Some(c) = p.version.captures(line) {
            out.nccl_version = Some(printable(&c[1], 64));
        }
        if line.is_empty() {
            continue;
        }
        let header = p.header.captures(line);
        // A block's sentences are indented; a line that is not ends it.
        if header.is_none() && !raw.starts_with(char::is_whitespace) {
            at = None;
            continue;
        }
        if let Some(c) = header {
            let id = hash_id(&c[1]);
            let i = match out.comms.iter().position(|k| k.id == id) {
                Some(i) => i,
                None => {
                    out.comms.push(RasComm {
                        id,
                        size: None,
                        ranks: Vec::new(),
                        missing_ranks: Vec::new(),
                        most: BTreeMap::new(),
                        said: Vec::new(),
                    });
                    out.comms.len() - 1
                }
            };
            at = Some((i, c[2].to_string()));
            group = None;
            say(&mut out.comms[i], line);
            continue;
        }
        let Some((i, kind)) = &at else { continue };
        let comm = &mut out.comms[*i];
        say(comm, line);
        if let Some(c) = p.op.captures(line) {
            op = printable(&c[1], 64);
            group = None;
        } else if line.contains(" ranks have status ") {
            group = None;
        } else if let Some(c) = p.group.captures(line) {
            let n = c.get(2).and_then(|n| n.as_str().parse().ok()).unwrap_or(0);
            group = Some(n);
            let most = comm.most.entry(op.clone()).or_default();
            *most = (*most).max(n);
        } else if let Some(c) = p.missing.captures(line) {
            for r in c[1].split(',').filter_map(|r| r.trim().parse().ok()) {
                entry(&mut comm.missing_ranks, r);
            }
        } else if let Some(c) = p.rank.captures(line) {
            let Ok(r) = c[1].parse::<u32>() else { continue };
            let list = if kind == "INCOMPLETE" {
                &mut comm.missing_ranks
            } else {
                &mut comm.ranks
            };
            let rank = entry(list, r);
            if let Some(w) = p.whom.captures(&c[6]) {
                rank.cuda_dev = w[1].parse().ok();
                rank.nvml_dev = w.get(2).map_or(rank.cuda_dev, |n| n.as_str().parse().ok());
                rank.pid = w[3].parse().ok();
                rank.host = Some(printable(w[4].trim(), 64));
            }
            let count = match (c.get(2), c.get(3)) {
                (Some(n), _) => n.as_str().parse().ok(),
                (None, Some(_)) => Some(0),
                _ if kind == "MISMATCH" && c.get(4).is_none() => group,
                _ => None,
            };
            if let Some(n) = count.filter(|_| kind == "MISMATCH") {
                rank.collectives.insert(op.clone(), n);
            }
            if let Some(s) = c.get(4).or(c.get(5)) {
                rank.status.push(printable(&s.as_str().to_lowercase(), 64));
            }
        }
    }
    Some(out)
}

fn say(comm: &mut RasComm, line: &str) {
    if comm.said.len() < MAX_SAID {
        comm.said.push(printable(line, MAX_SENTENCE));
    }
}

/// The entry of rank `r` in `list`, made when it has none.
fn entry(list: &mut Vec<RasRank>, r: u32) -> &mut RasRank {
    let i = match list.iter().position(|k| k.rank == r) {
        Some(i) => i,
        None => {
            list.push(RasRank {
                rank: r,
                host: None,
                pid: None,
                cuda_dev: None,
                nvml_dev: None,
                status: Vec::new(),
                collectives: BTreeMap::new(),
            });
            list.len() - 1
        }
    };
    &mut list[i]
}
