//! What NCCL's RAS service (NCCL >= 2.24, one per host) said of a job's communicators: each
//! rank's liveness and how many collectives of each kind it has launched, and the ranks it could
//! not reach. Read by `source::ras`; the model keeps the latest; analysis names a rank that is
//! behind or missing from it.
//!
//! Every string in it came from another process's answer: made printable and short
//! (`job::printable`) before it is kept.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The RAS service's answer at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RasStatus {
    /// When the answer was read, milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// NCCL's version as the service said it (`2.28.9`); `None` in a text answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_version: Option<String>,
    /// The communicators it knows of, in its order.
    pub comms: Vec<RasComm>,
}

/// One NCCL communicator as RAS saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RasComm {
    /// Its hash, 16 lowercase hex digits (the id NCCL's own debug output uses).
    pub id: String,
    /// Ranks in the communicator; `None` in a text answer, which does not say it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u32>,
    /// The ranks that answered. A text answer lists only the ranks it singles out (the outliers
    /// of a mismatch), with the counts it gave for them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<RasRank>,
    /// The ranks RAS could not get this communicator's data from (status `unresponsive`,
    /// `considered_dead`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_ranks: Vec<RasRank>,
    /// The most collectives of each kind a group of its ranks has launched, where a text answer
    /// says so without naming the group's ranks ("3 ranks have launched up to operation 211");
    /// empty in a JSON answer, whose `ranks` all carry their counts.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub most: BTreeMap<String, u64>,
    /// The text answer's own sentences about it (`MISMATCH`, `INCOMPLETE`, `ERROR` and the lines
    /// under them), where the service answered in text; a JSON answer has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub said: Vec<String>,
}

/// One rank of a communicator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RasRank {
    pub rank: u32,
    /// The node's address as RAS names it; `None` where it did not know.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_dev: Option<u32>,
    /// NVML's index of its GPU (unlike `cuda_dev`, unique on a node under
    /// `CUDA_VISIBLE_DEVICES`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvml_dev: Option<u32>,
    /// What is wrong with it, in RAS's words: `init_state N` (not initialised: 7 is still
    /// initialising), `async_error N`, `finalize_called`, `destroy_flag`, `abort_flag`,
    /// `unresponsive`, `considered_dead`; empty for a rank running normally.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status: Vec<String>,
    /// Collectives launched, by NCCL's name of the operation (`AllReduce`, `Broadcast`, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub collectives: BTreeMap<String, u64>,
}

/// A rank that has launched fewer collectives of one kind than the communicator's leader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Behind<'a> {
    pub rank: &'a RasRank,
    /// The operation (`AllReduce`).
    pub op: &'a str,
    /// What it has launched, and the most any rank of the communicator has.
    pub launched: u64,
    pub most: u64,
}

impl RasComm {
    /// The ranks behind the others, per operation (behind the most any listed rank, or a group
    /// the text answer counted, has launched), the furthest behind first: the rank a job waits for when its other ranks have moved on (RAS reads the counts of all ranks within
    /// one collection, so a rank a few behind may only be on its way).
    pub fn behind(&self) -> Vec<Behind<'_>> {
        let mut most: BTreeMap<&str, u64> =
            self.most.iter().map(|(op, n)| (op.as_str(), *n)).collect();
        for r in &self.ranks {
            for (op, n) in &r.collectives {
                let m = most.entry(op.as_str()).or_default();
                *m = (*m).max(*n);
            }
        }
        let mut out: Vec<Behind<'_>> = self
            .ranks
            .iter()
            .flat_map(|r| {
                let most = &most;
                r.collectives.iter().filter_map(move |(op, &n)| {
                    let m = most.get(op.as_str()).copied().unwrap_or(n);
                    (n < m).then_some(Behind {
                        rank: r,
                        op,
                        launched: n,
                        most: m,
                    })
                })
            })
            .collect();
        out.sort_by_key(|b| (std::cmp::Reverse(b.most - b.launched), b.rank.rank));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank(rank: u32, all_reduce: u64) -> RasRank {
        RasRank {
            rank,
            host: Some("10.0.0.1".into()),
            pid: Some(1000 + rank),
            cuda_dev: Some(rank),
            nvml_dev: Some(rank),
            status: Vec::new(),
            collectives: BTreeMap::from([
                ("AllReduce".to_string(), all_reduce),
                ("Broadcast".to_string(), 1),
            ]),
        }
    }

    #[test]
    fn the_rank_behind_is_named_with_how_far() {
        let comm = RasComm {
            id: "b8338c39bf1d44bc".into(),
            size: Some(4),
            ranks: vec![rank(0, 211), rank(1, 211), rank(2, 196), rank(3, 211)],
            missing_ranks: Vec::new(),
            most: BTreeMap::new(),
            said: Vec::new(),
        };
        let behind = comm.behind();
        assert_eq!(behind.len(), 1);
        assert_eq!(behind[0].rank.rank, 2);
        assert_eq!(
            (behind[0].op, behind[0].launched, behind[0].most),
            ("AllReduce", 196, 211)
        );
    }

    #[test]
    fn a_status_reads_back_and_old_fields_may_be_absent() {
        let s = RasStatus {
            at_ms: 5,
            nccl_version: None,
            comms: vec![RasComm {
                id: "00000000000000ab".into(),
                size: None,
                ranks: vec![rank(0, 3)],
                missing_ranks: Vec::new(),
                most: BTreeMap::new(),
                said: vec!["MISMATCH".into()],
            }],
        };
        let json = serde_json::to_value(&s).unwrap();
        assert!(json.get("nccl_version").is_none());
        assert!(json["comms"][0].get("missing_ranks").is_none());
        assert_eq!(serde_json::from_value::<RasStatus>(json).unwrap(), s);
        let bare: RasStatus = serde_json::from_str(r#"{"at_ms":1,"comms":[{"id":"x"}]}"#).unwrap();
        assert!(bare.comms[0].ranks.is_empty() && bare.comms[0].behind().is_empty());
    }
}
