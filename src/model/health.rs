//! What a GPU's memory health says that is worth a word (derived in `Machine::ingest`): an
//! uncorrected ECC error, a row remap pending or failed, a page retirement pending, ECC off on a
//! board that ships with it on, an ECC mode change waiting for a reset; and its Xid events.

use crate::sample::{GpuEvent, Health};

/// Data-centre boards that ship with ECC on: ECC off on one of these is worth saying.
const ECC_ON_BY_DEFAULT: &[&str] = &[
    "A100", "A30", "A800", "H100", "H200", "H800", "B200", "V100",
];

/// One thing to say about a GPU's memory health.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trouble {
    /// Uncorrected ECC errors since the driver loaded (the volatile count).
    Uncorrected(u64),
    RemapPending,
    RemapFailure,
    RetirementPending,
    /// ECC off on a board that ships with it on.
    EccOff,
    /// ECC will be on (true) or off (false) after the next reset.
    EccChanging(bool),
}

impl Trouble {
    /// As short as the GPU's line needs it: "2 ECC uncorr", "remap pending".
    pub fn short(self) -> String {
        match self {
            Trouble::Uncorrected(n) => format!("{n} ECC uncorr"),
            Trouble::RemapPending => "remap pending".into(),
            Trouble::RemapFailure => "remap failed".into(),
            Trouble::RetirementPending => "retire pending".into(),
            Trouble::EccOff => "ECC off".into(),
            Trouble::EccChanging(on) => format!("ECC {} at reset", if on { "on" } else { "off" }),
        }
    }

    /// In a few words, for alerts and text.
    pub fn words(self) -> String {
        match self {
            Trouble::Uncorrected(n) => {
                format!("{n} uncorrected ECC error{}", if n == 1 { "" } else { "s" })
            }
            Trouble::RemapPending => "row remap pending: reset".into(),
            Trouble::RemapFailure => "row remap failed".into(),
            Trouble::RetirementPending => "page retirement pending".into(),
            Trouble::EccOff => "ECC off".into(),
            Trouble::EccChanging(on) => {
                format!("ECC {} at next reset", if on { "on" } else { "off" })
            }
        }
    }
}

/// What is worth saying about `h` on a GPU named `name`, what needs doing first; empty when all
/// is well (or unread).
pub fn troubles(h: &Health, name: &str) -> Vec<Trouble> {
    let mut out = Vec::new();
    if let Some(r) = h.remapped_rows.value() {
        if r.failure {
            out.push(Trouble::RemapFailure);
        }
        if r.pending {
            out.push(Trouble::RemapPending);
        }
    }
    if h.retired_pages.value().is_some_and(|p| p.pending) {
        out.push(Trouble::RetirementPending);
    }
    if let Some(n) = h.ecc_volatile.value().map(|c| c.uncorrected)
        && n > 0
    {
        out.push(Trouble::Uncorrected(n));
    }
    if let Some(m) = h.ecc_mode.value() {
        let usually_on = ECC_ON_BY_DEFAULT.iter().any(|b| name.contains(b));
        if !m.current && usually_on {
            out.push(Trouble::EccOff);
        }
        if m.pending != m.current {
            out.push(Trouble::EccChanging(m.pending));
        }
    }
    out
}

/// A GPU's Xid events since gpumon started watching it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct XidTally {
    pub count: u64,
    /// The last one's code (`None`: NVML did not know it) and time.
    pub last: Option<(Option<u64>, u64)>,
}

impl XidTally {
    /// Counts the Xids among `events` that name `uuid`.
    pub fn add(&mut self, events: &[GpuEvent], uuid: &str) {
        for e in events {
            if let crate::sample::health::GpuEventKind::Xid { code } = e.kind
                && e.gpu_uuid.as_deref() == Some(uuid)
            {
                self.count += 1;
                if self.last.is_none_or(|(_, at)| e.at_ms >= at) {
                    self.last = Some((code, e.at_ms));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::Reading;
    use crate::sample::health::{EccCount, EccMode, RemappedRows};

    fn healthy() -> Health {
        Health {
            ecc_mode: Reading::Value(EccMode {
                current: true,
                pending: true,
            }),
            ecc_volatile: Reading::Value(EccCount::default()),
            ecc_aggregate: Reading::Value(EccCount {
                corrected: 5,
                uncorrected: 1,
            }),
            remapped_rows: Reading::Value(RemappedRows::default()),
            retired_pages: Reading::na("not supported on this GPU"),
        }
    }

    #[test]
    fn a_healthy_gpu_has_nothing_to_say() {
        // An uncorrected error in the GPU's past (aggregate) is history, not news.
        assert_eq!(troubles(&healthy(), "NVIDIA H100 80GB HBM3"), vec![]);
        assert_eq!(
            troubles(&Health::unavailable("lost"), "NVIDIA H100"),
            vec![]
        );
    }

    #[test]
    fn errors_remaps_and_ecc_mode() {
        let h = Health {
            ecc_volatile: Reading::Value(EccCount {
                corrected: 0,
                uncorrected: 2,
            }),
            remapped_rows: Reading::Value(RemappedRows {
                uncorrected: 1,
                pending: true,
                ..RemappedRows::default()
            }),
            ecc_mode: Reading::Value(EccMode {
                current: false,
                pending: true,
            }),
            ..healthy()
        };
        let t = troubles(&h, "NVIDIA H200");
        assert_eq!(
            t,
            vec![
                Trouble::RemapPending,
                Trouble::Uncorrected(2),
                Trouble::EccOff,
                Trouble::EccChanging(true)
            ]
        );
        assert_eq!(t[1].words(), "2 uncorrected ECC errors");
        // A consumer board with ECC off is as it ships.
        assert!(!troubles(&h, "NVIDIA GeForce RTX 4090").contains(&Trouble::EccOff));
    }
}
