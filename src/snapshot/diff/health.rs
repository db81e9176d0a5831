//! Differences in two GPUs' memory health: ECC mode (on, off, changing at the next reset) and
//! remapped rows (a remap pending or failed, rows remapped after uncorrectable errors), each with
//! what it does to the memory a job can use.

use super::{Difference, Topic};
use crate::sample::Health;
use crate::sample::health::{EccMode, RemappedRows};

fn ecc(m: Option<&EccMode>) -> String {
    match m {
        None => "n/a".into(),
        Some(m) if m.current == m.pending => if m.current { "on" } else { "off" }.into(),
        Some(m) => format!(
            "{} ({} at next reset)",
            if m.current { "on" } else { "off" },
            if m.pending { "on" } else { "off" }
        ),
    }
}

fn rows(r: Option<&RemappedRows>) -> String {
    match r {
        None => "n/a".into(),
        Some(r) => {
            let mut s = format!("{} corrected, {} uncorrected", r.corrected, r.uncorrected);
            if r.pending {
                s.push_str(", remap pending");
            }
            if r.failure {
                s.push_str(", remap failed");
            }
            s
        }
    }
}

/// The health differences of GPU `gpu` between `a` and `b` (nothing when either was not read).
pub fn pair(gpu: &str, a: Option<&Health>, b: Option<&Health>, out: &mut Vec<Difference>) {
    let (Some(a), Some(b)) = (a, b) else { return };
    let (ea, eb) = (a.ecc_mode.value(), b.ecc_mode.value());
    if ea != eb {
        out.push(Difference::text(
            Topic::MemoryHealth,
            format!("{gpu} ECC mode"),
            ecc(ea),
            ecc(eb),
            "With ECC on, a part of device memory holds the check bits on GPUs without HBM, and \
             an uncorrectable error stops the processes using that memory instead of corrupting \
             their results; the mode changes only at a reset."
                .into(),
        ));
    }
    let (ra, rb) = (a.remapped_rows.value(), b.remapped_rows.value());
    if ra != rb {
        let pending = ra.is_some_and(|r| r.pending) || rb.is_some_and(|r| r.pending);
        let failed = ra.is_some_and(|r| r.failure) || rb.is_some_and(|r| r.failure);
        let effect = if failed {
            "A GPU whose remap failed has no spare rows left: take it out of service."
        } else if pending {
            "A GPU with a remap pending has a bad row it cannot use until it is reset: jobs \
             placed on it may fail in ways that look like bugs."
        } else {
            "Rows remapped after uncorrectable errors are replaced by spare rows: the GPU works, \
             but its memory has had faults."
        };
        out.push(Difference::text(
            Topic::MemoryHealth,
            format!("{gpu} remapped rows"),
            rows(ra),
            rows(rb),
            effect.into(),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::Reading;
    use crate::sample::health::EccCount;

    fn health(ecc_on: bool, pending: bool) -> Health {
        Health {
            ecc_mode: Reading::Value(EccMode {
                current: ecc_on,
                pending: true,
            }),
            ecc_volatile: Reading::Value(EccCount::default()),
            ecc_aggregate: Reading::Value(EccCount::default()),
            remapped_rows: Reading::Value(RemappedRows {
                pending,
                uncorrected: u64::from(pending),
                ..RemappedRows::default()
            }),
            retired_pages: Reading::na("not supported on this GPU"),
        }
    }

    #[test]
    fn ecc_mode_and_a_pending_remap_differ() {
        let mut out = Vec::new();
        pair(
            "GPU 0",
            Some(&health(true, false)),
            Some(&health(false, true)),
            &mut out,
        );
        assert_eq!(out.len(), 2);
        assert_eq!(
            (out[0].a.as_str(), out[0].b.as_str()),
            ("on", "off (on at next reset)")
        );
        assert_eq!(out[1].b, "0 corrected, 1 uncorrected, remap pending");
        assert!(out[1].effect.contains("until it is reset"));
        let mut same = Vec::new();
        pair(
            "GPU 0",
            Some(&health(true, false)),
            Some(&health(true, false)),
            &mut same,
        );
        pair("GPU 0", None, Some(&health(false, true)), &mut same);
        assert!(
            same.is_empty(),
            "equal, or not read on one side: nothing to say"
        );
    }
}
