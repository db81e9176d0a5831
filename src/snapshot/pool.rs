//! A probed process's allocator pool in a snapshot: its figures as last read (`PoolDoc`), and
//! the same figures over the history window and the coarse tiers (`PoolHistoryDoc`,
//! `PoolTiersDoc`).

use serde::{Deserialize, Serialize};

use super::{Point, TierDoc};

/// A framework's memory pool on one GPU (the probe's device figures), bytes as reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolDoc {
    /// The probe's framework name: "pytorch", "jax", "cupy" or "tensorflow".
    pub framework: String,
    pub allocated: Option<u64>,
    pub reserved: Option<u64>,
    pub cached_free: Option<u64>,
    pub stranded: Option<u64>,
    pub largest_free_block: Option<u64>,
    pub limit: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// When the probe read the figures (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub largest_alloc: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_allocated: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_reserved: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc_retries: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ooms: Option<u64>,
}

/// The probe's figures over the history window, each oldest first (a null value is a gap).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolHistoryDoc {
    pub allocated: Vec<Point>,
    pub reserved: Vec<Point>,
    pub stranded: Vec<Point>,
    pub limit: Vec<Point>,
    /// The probe's peak allocated (absent in older snapshots).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peak: Vec<Point>,
    /// The same series over days, each's coarse tiers finest first (absent in a compact
    /// snapshot and in older ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiers: Option<PoolTiersDoc>,
}

/// A pool's series over days: each one's coarse tiers, finest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolTiersDoc {
    pub allocated: Vec<TierDoc>,
    pub reserved: Vec<TierDoc>,
    pub stranded: Vec<TierDoc>,
    pub peak: Vec<TierDoc>,
}
