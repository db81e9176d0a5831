//! A ring's coarse tiers in a snapshot (`TierDoc`, optional fields): each tier's bucket length,
//! the start of its oldest bucket and, column by column, its buckets' lowest, highest and last
//! reading (`null`: no reading in that bucket, a gap). Back into a ring's tiers on restore.

use serde::{Deserialize, Serialize};

use crate::model::{Bucket, Ring, TIERS, Tier, Tiers};

/// One coarse tier of a series.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierDoc {
    /// The length of each bucket, ms; buckets follow one another without holes.
    pub bucket_ms: u64,
    /// The start of the oldest bucket, ms since the Unix epoch.
    pub start_ms: u64,
    /// Each bucket's lowest reading, bytes (rounded down to the KiB).
    pub min: Vec<Option<u64>>,
    /// Each bucket's highest reading, bytes (rounded up to the KiB).
    pub max: Vec<Option<u64>>,
    /// Each bucket's last reading, bytes (rounded down to the KiB).
    pub last: Vec<Option<u64>>,
}

/// The ring's tiers as documents, finest first; empty without tiers or readings.
pub fn docs(ring: &Ring) -> Vec<TierDoc> {
    (0..TIERS.len())
        .filter_map(|i| ring.tier(i))
        .filter(|t| !t.is_empty())
        .map(|t| {
            let buckets: Vec<Bucket> = t.iter().collect();
            TierDoc {
                bucket_ms: t.bucket_ms(),
                start_ms: buckets.first().map_or(0, |b| b.at_ms),
                min: buckets.iter().map(|b| b.min).collect(),
                max: buckets.iter().map(|b| b.max).collect(),
                last: buckets.iter().map(|b| b.last).collect(),
            }
        })
        .collect()
}

/// Drops every coarse tier from a snapshot (a poll that needs only the fine history).
pub fn strip(s: &mut super::Snapshot) {
    for g in &mut s.gpus {
        g.used_tiers.clear();
    }
    for p in &mut s.processes {
        p.history_tiers.clear();
        if let Some(h) = &mut p.pool_history {
            h.tiers = None;
        }
    }
}

/// Copies `from`'s coarse tiers into `into` (a later snapshot of the same machine made without
/// them): each GPU's by UUID, each process's by PID, GPU and start time; a GPU or process `from`
/// does not have keeps none.
pub fn graft(from: &super::Snapshot, into: &mut super::Snapshot) {
    for g in &mut into.gpus {
        if let Some(f) = from.gpus.iter().find(|f| f.uuid == g.uuid) {
            g.used_tiers.clone_from(&f.used_tiers);
        }
    }
    for p in &mut into.processes {
        let same = |f: &&super::Process| {
            (f.pid, &f.gpu_uuid, &f.started_at) == (p.pid, &p.gpu_uuid, &p.started_at)
        };
        if let Some(f) = from.processes.iter().find(same) {
            p.history_tiers.clone_from(&f.history_tiers);
            if let (Some(h), Some(fh)) = (&mut p.pool_history, &f.pool_history) {
                h.tiers.clone_from(&fh.tiers);
            }
        }
    }
}

/// The tiers back from their documents: each tier of this gpumon's resolutions from the
/// document of the same bucket length (empty where there is none); `None` when there are no
/// documents (the snapshot had no tiers: an older one, or a compact one).
pub fn restore(docs: &[TierDoc]) -> Option<Tiers> {
    if docs.is_empty() {
        return None;
    }
    Some(Tiers(TIERS.map(|r| {
        docs.iter()
            .find(|d| d.bucket_ms == r.bucket_ms)
            .map_or_else(
                || Tier::new(r),
                |d| {
                    let buckets: Vec<Bucket> = (0..d.min.len())
                        .map(|i| Bucket {
                            at_ms: d
                                .start_ms
                                .saturating_add(d.bucket_ms.saturating_mul(i as u64)),
                            min: d.min[i],
                            max: d.max.get(i).copied().flatten(),
                            last: d.last.get(i).copied().flatten(),
                        })
                        .collect();
                    Tier::restore(r, d.start_ms, &buckets)
                },
            )
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_survive_a_round_trip_and_their_absence_stays_absent() {
        let mut ring = Ring::with_tiers(10);
        for k in 0..500u64 {
            ring.push(1_000_000 + k * 3_000, (k % 7 != 0).then_some(k << 20));
        }
        let d = docs(&ring);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].bucket_ms, 10_000);
        let back = Ring::restore(10, &ring.iter().copied().collect::<Vec<_>>(), restore(&d));
        assert_eq!(back.tier(0), ring.tier(0));
        assert_eq!(back.tier(1), ring.tier(1));
        assert!(restore(&[]).is_none());
        assert!(docs(&Ring::new(4)).is_empty());
    }
}
