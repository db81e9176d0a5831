//! A GPU's memory health as NVML counts it (ECC mode and errors, remapped rows, retired pages)
//! and the driver's events (Xid errors, ECC and remap events), in the sample's wire shape: each
//! reading `null` plus its reason in `unavailable` when the GPU or driver has none.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Reading, join, split};

/// ECC mode: whether it is on now, and whether it will be after the next reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EccMode {
    pub current: bool,
    pub pending: bool,
}

/// ECC error counts of one counter (volatile: since the driver loaded; aggregate: the GPU's life).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EccCount {
    pub corrected: u64,
    pub uncorrected: u64,
}

/// Rows of DRAM remapped to spare rows (Ampere and later), as `nvmlDeviceGetRemappedRows` gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemappedRows {
    /// Remapped after correctable errors.
    pub corrected: u64,
    /// Remapped after uncorrectable errors.
    pub uncorrected: u64,
    /// A remap waits for the GPU's next reset (until then the row is unusable).
    pub pending: bool,
    /// A remap failed: the GPU ran out of spare rows.
    pub failure: bool,
}

/// Pages of device memory retired (Volta and older; later GPUs remap rows instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetiredPages {
    /// Retired after multiple single-bit (corrected) errors.
    pub single_bit: u64,
    /// Retired after a double-bit (uncorrected) error.
    pub double_bit: u64,
    /// A retirement waits for the next driver reload.
    pub pending: bool,
}

/// One GPU's memory health at one reading (read on its own slower period).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "HealthWire", from = "HealthWire")]
pub struct Health {
    pub ecc_mode: Reading<EccMode>,
    pub ecc_volatile: Reading<EccCount>,
    pub ecc_aggregate: Reading<EccCount>,
    pub remapped_rows: Reading<RemappedRows>,
    pub retired_pages: Reading<RetiredPages>,
}

impl Health {
    /// Every reading n/a for the same reason (a lost GPU).
    pub fn unavailable(why: &str) -> Health {
        Health {
            ecc_mode: Reading::na(why),
            ecc_volatile: Reading::na(why),
            ecc_aggregate: Reading::na(why),
            remapped_rows: Reading::na(why),
            retired_pages: Reading::na(why),
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HealthWire {
    ecc_mode: Option<EccMode>,
    ecc_volatile: Option<EccCount>,
    ecc_aggregate: Option<EccCount>,
    remapped_rows: Option<RemappedRows>,
    retired_pages: Option<RetiredPages>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    unavailable: BTreeMap<String, String>,
}

impl From<Health> for HealthWire {
    fn from(h: Health) -> Self {
        let mut na = BTreeMap::new();
        HealthWire {
            ecc_mode: split(h.ecc_mode, "ecc_mode", &mut na),
            ecc_volatile: split(h.ecc_volatile, "ecc_volatile", &mut na),
            ecc_aggregate: split(h.ecc_aggregate, "ecc_aggregate", &mut na),
            remapped_rows: split(h.remapped_rows, "remapped_rows", &mut na),
            retired_pages: split(h.retired_pages, "retired_pages", &mut na),
            unavailable: na,
        }
    }
}

impl From<HealthWire> for Health {
    fn from(w: HealthWire) -> Self {
        let na = &w.unavailable;
        Health {
            ecc_mode: join(w.ecc_mode, "ecc_mode", na),
            ecc_volatile: join(w.ecc_volatile, "ecc_volatile", na),
            ecc_aggregate: join(w.ecc_aggregate, "ecc_aggregate", na),
            remapped_rows: join(w.remapped_rows, "remapped_rows", na),
            retired_pages: join(w.retired_pages, "retired_pages", na),
        }
    }
}

/// What the driver reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GpuEventKind {
    /// An Xid error; `code` is `None` where NVML could not say which (its 999).
    Xid { code: Option<u64> },
    /// NVML's double-bit (uncorrected) ECC error event.
    EccUncorrected,
    /// NVML's DRAM retirement (row remap) event.
    Remap,
    /// NVML's DRAM retirement failure event.
    RemapFailure,
}

/// Who told gpumon of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventOrigin {
    /// NVML's event set.
    Nvml,
    /// The kernel log's `NVRM: Xid` line.
    Kernel,
}

/// One event of a GPU, as heard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuEvent {
    /// When gpumon heard it, milliseconds since the epoch (a kernel line's own time where it had one).
    pub at_ms: u64,
    /// The GPU, where it could be named (NVML's handle, or the kernel line's PCI address matched
    /// to a listed GPU); `None` for a GPU no longer listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_uuid: Option<String>,
    /// The PCI address the kernel line gave (`0000:19:00`), when it came from there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci: Option<String>,
    #[serde(flatten)]
    pub kind: GpuEventKind,
    /// The process the kernel line names (NVML's events carry none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// That process's name as the kernel line gives it (someone else's text: shown escaped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    pub origin: EventOrigin,
    /// The rest of the kernel line (capped), e.g. the MMU fault's address and access type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl GpuEvent {
    /// Its Xid code, when it is an Xid with a known code.
    pub fn xid(&self) -> Option<u64> {
        match self.kind {
            GpuEventKind::Xid { code } => code,
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_readings_are_null_with_a_reason() {
        let h = Health {
            ecc_mode: Reading::Value(EccMode {
                current: true,
                pending: true,
            }),
            ecc_volatile: Reading::Value(EccCount {
                corrected: 0,
                uncorrected: 2,
            }),
            ecc_aggregate: Reading::Value(EccCount::default()),
            remapped_rows: Reading::Value(RemappedRows {
                pending: true,
                ..RemappedRows::default()
            }),
            retired_pages: Reading::na("not supported on this GPU"),
        };
        let json = serde_json::to_value(&h).unwrap();
        assert_eq!(json["retired_pages"], serde_json::Value::Null);
        assert_eq!(
            json["unavailable"]["retired_pages"],
            "not supported on this GPU"
        );
        assert_eq!(json["ecc_aggregate"]["uncorrected"], 0, "zeros are values");
        assert_eq!(serde_json::from_value::<Health>(json).unwrap(), h);
    }

    #[test]
    fn an_event_reads_back() {
        let e = GpuEvent {
            at_ms: 5,
            gpu_uuid: None,
            pci: Some("0000:00:06".into()),
            kind: GpuEventKind::Xid { code: Some(31) },
            pid: Some(514),
            process: Some("python3".into()),
            origin: EventOrigin::Kernel,
            detail: None,
        };
        let json = serde_json::to_string(&e).unwrap();
        assert!(json.contains(r#""kind":"xid","code":31"#), "{json}");
        assert_eq!(serde_json::from_str::<GpuEvent>(&json).unwrap(), e);
        assert_eq!(e.xid(), Some(31));
    }
}
