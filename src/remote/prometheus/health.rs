//! A GPU's memory health from Prometheus: gpumon's own series (`gpumon_gpu_ecc_errors_total`,
//! `gpumon_gpu_remapped_rows`, …) or, for a host without gpumon, dcgm-exporter's
//! (`DCGM_FI_DEV_ECC_{SBE,DBE}_{VOL,AGG}_TOTAL`, `DCGM_FI_DEV_{CORRECTABLE,UNCORRECTABLE}_REMAPPED_ROWS`,
//! `DCGM_FI_DEV_ROW_REMAP_{PENDING,FAILURE}`, `DCGM_FI_DEV_RETIRED_{SBE,DBE,PENDING}`,
//! `DCGM_FI_DEV_ECC_{CURRENT,PENDING}`, `DCGM_FI_DEV_XID_ERRORS`). A reading whose series are not
//! all there is n/a, never 0.

use std::collections::BTreeMap;

use crate::model::{Alert, Level};
use crate::sample::Reading;
use crate::sample::health::{EccCount, EccMode, Health, RemappedRows, RetiredPages};

const NOT_IN_PROMETHEUS: &str = "not in Prometheus";

/// The health field a series gives (by its name and labels), if it is one.
pub fn field(name: &str, label: impl Fn(&str) -> Option<String>) -> Option<&'static str> {
    let l = |k: &str| label(k).unwrap_or_default();
    Some(match name {
        "gpumon_gpu_ecc_errors_total" => match (l("counter").as_str(), l("kind").as_str()) {
            ("volatile", "corrected") => "vol_corrected",
            ("volatile", "uncorrected") => "vol_uncorrected",
            ("aggregate", "corrected") => "agg_corrected",
            ("aggregate", "uncorrected") => "agg_uncorrected",
            _ => return None,
        },
        "gpumon_gpu_ecc_mode" => match l("mode").as_str() {
            "current" => "ecc_current",
            "pending" => "ecc_pending",
            _ => return None,
        },
        "gpumon_gpu_remapped_rows" => match l("state").as_str() {
            "corrected" => "rows_corrected",
            "uncorrected" => "rows_uncorrected",
            "pending" => "rows_pending",
            "failure" => "rows_failure",
            _ => return None,
        },
        "gpumon_gpu_retired_pages" => match l("cause").as_str() {
            "single_bit" => "pages_sbe",
            "double_bit" => "pages_dbe",
            "pending" => "pages_pending",
            _ => return None,
        },
        "gpumon_gpu_xid_last_code" | "DCGM_FI_DEV_XID_ERRORS" => "xid",
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL" => "vol_corrected",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" => "vol_uncorrected",
        "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL" => "agg_corrected",
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL" => "agg_uncorrected",
        "DCGM_FI_DEV_ECC_CURRENT" => "ecc_current",
        "DCGM_FI_DEV_ECC_PENDING" => "ecc_pending",
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS" => "rows_corrected",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS" => "rows_uncorrected",
        "DCGM_FI_DEV_ROW_REMAP_PENDING" => "rows_pending",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE" => "rows_failure",
        "DCGM_FI_DEV_RETIRED_SBE" => "pages_sbe",
        "DCGM_FI_DEV_RETIRED_DBE" => "pages_dbe",
        "DCGM_FI_DEV_RETIRED_PENDING" => "pages_pending",
        _ => return None,
    })
}

/// The health the fields add up to; `None` when Prometheus had none of them for this GPU.
pub fn reading(f: &BTreeMap<&'static str, u64>) -> Option<Health> {
    if f.keys().all(|k| *k == "xid") {
        return None;
    }
    let get = |k: &str| f.get(k).copied();
    let both = |a: &str, b: &str| match (get(a), get(b)) {
        (Some(x), Some(y)) => Reading::Value((x, y)),
        _ => Reading::na(NOT_IN_PROMETHEUS),
    };
    let count = |a, b| {
        both(a, b).map(|(corrected, uncorrected)| EccCount {
            corrected,
            uncorrected,
        })
    };
    let rows = match (
        both("rows_corrected", "rows_uncorrected"),
        both("rows_pending", "rows_failure"),
    ) {
        (Reading::Value((c, u)), Reading::Value((p, fail))) => Reading::Value(RemappedRows {
            corrected: c,
            uncorrected: u,
            pending: p > 0,
            failure: fail > 0,
        }),
        _ => Reading::na(NOT_IN_PROMETHEUS),
    };
    let pages = match (both("pages_sbe", "pages_dbe"), get("pages_pending")) {
        (Reading::Value((s, d)), Some(p)) => Reading::Value(RetiredPages {
            single_bit: s,
            double_bit: d,
            pending: p > 0,
        }),
        _ => Reading::na(NOT_IN_PROMETHEUS),
    };
    Some(Health {
        ecc_mode: both("ecc_current", "ecc_pending").map(|(c, p)| EccMode {
            current: c > 0,
            pending: p > 0,
        }),
        ecc_volatile: count("vol_corrected", "vol_uncorrected"),
        ecc_aggregate: count("agg_corrected", "agg_uncorrected"),
        remapped_rows: rows,
        retired_pages: pages,
    })
}

/// dcgm-exporter's last Xid of a GPU (`DCGM_FI_DEV_XID_ERRORS`: the code, not when it came).
pub fn last_xid(index: u32, uuid: &str, code: u64, at_ms: u64) -> Alert {
    Alert {
        at_ms,
        gpu_uuid: Some(uuid.to_string()),
        pid: None,
        level: Level::Suspected,
        class: "xid".into(),
        confidence: None,
        title: format!(
            "GPU{index}'s last Xid: {} (DCGM_FI_DEV_XID_ERRORS, from Prometheus)",
            crate::oom::xid::label(Some(code))
        ),
        evidence: crate::oom::xid::meaning(code)
            .map(|m| vec![m.words.to_string()])
            .unwrap_or_default(),
        remedy: None,
        job: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dcgm_fields_make_readings_and_missing_ones_are_na() {
        let label = |_: &str| None;
        let mut f = BTreeMap::new();
        for (name, v) in [
            ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", 0),
            ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", 2),
            ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", 0),
            ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", 1),
            ("DCGM_FI_DEV_ROW_REMAP_PENDING", 1),
            ("DCGM_FI_DEV_ROW_REMAP_FAILURE", 0),
        ] {
            f.insert(field(name, label).unwrap(), v);
        }
        let h = reading(&f).unwrap();
        assert_eq!(h.ecc_volatile.value().unwrap().uncorrected, 2);
        assert!(h.remapped_rows.value().unwrap().pending);
        assert_eq!(h.ecc_aggregate, Reading::na(NOT_IN_PROMETHEUS));
        assert_eq!(h.ecc_mode, Reading::na(NOT_IN_PROMETHEUS));
        assert_eq!(reading(&BTreeMap::from([("xid", 48)])), None);
        let gpumon = |k: &str| match k {
            "counter" => Some("aggregate".to_string()),
            "kind" => Some("uncorrected".to_string()),
            _ => None,
        };
        assert_eq!(
            field("gpumon_gpu_ecc_errors_total", gpumon),
            Some("agg_uncorrected")
        );
        assert_eq!(field("DCGM_FI_DEV_FB_USED", label), None);
    }
}
