//! `/metrics`' memory-health series per GPU, with the GPU series' labels (dcgm-exporter's names):
//! ECC mode, ECC error counters by kind and counter, remapped rows by state, retired pages, the
//! last Xid's code and time, and memory faults read from logs by class. A reading that could not
//! be had has no series (absent is not zero).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::time::UNIX_EPOCH;

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Unit;

use super::{Labels, gauges};
use crate::analysis::gpu_events::FAULT_CLASSES;
use crate::sample::health::EccCount;
use crate::snapshot::Gpu;

/// The GPUs' health series; `series` are the GPUs with their labels.
pub(super) fn encode<'a>(
    enc: &mut DescriptorEncoder,
    series: &[(Labels<'a>, &Gpu)],
) -> fmt::Result {
    fn with<'a>(labels: &Labels<'a>, k: &'static str, v: &'static str) -> Labels<'a> {
        let mut l = labels.clone();
        l.push((k, Cow::Borrowed(v)));
        l
    }
    let mut mode: Vec<(Labels, u64)> = Vec::new();
    let mut ecc: Vec<(Labels, u64)> = Vec::new();
    let mut rows: Vec<(Labels, u64)> = Vec::new();
    let mut pages: Vec<(Labels, u64)> = Vec::new();
    for (labels, g) in series {
        let Some(h) = &g.health else { continue };
        if let Some(m) = h.ecc_mode.value() {
            mode.push((with(labels, "mode", "current"), u64::from(m.current)));
            mode.push((with(labels, "mode", "pending"), u64::from(m.pending)));
        }
        let counts = [
            ("volatile", &h.ecc_volatile),
            ("aggregate", &h.ecc_aggregate),
        ];
        for (counter, c) in counts {
            if let Some(EccCount {
                corrected,
                uncorrected,
            }) = c.value()
            {
                let l = with(labels, "counter", counter);
                ecc.push((with(&l, "kind", "corrected"), *corrected));
                ecc.push((with(&l, "kind", "uncorrected"), *uncorrected));
            }
        }
        if let Some(r) = h.remapped_rows.value() {
            rows.push((with(labels, "state", "corrected"), r.corrected));
            rows.push((with(labels, "state", "uncorrected"), r.uncorrected));
            rows.push((with(labels, "state", "pending"), u64::from(r.pending)));
            rows.push((with(labels, "state", "failure"), u64::from(r.failure)));
        }
        if let Some(p) = h.retired_pages.value() {
            pages.push((with(labels, "cause", "single_bit"), p.single_bit));
            pages.push((with(labels, "cause", "double_bit"), p.double_bit));
            pages.push((with(labels, "cause", "pending"), u64::from(p.pending)));
        }
    }
    gauge_list(
        enc,
        "gpumon_gpu_ecc_mode",
        "ECC on (1) or off (0), now (mode=current) and after the next reset (mode=pending).",
        &mode,
    )?;
    counters(
        enc,
        "gpumon_gpu_ecc_errors",
        "ECC errors (NVML's totals, SRAM and DRAM): counter=volatile since the driver loaded, aggregate over the GPU's life; kind=corrected|uncorrected.",
        &ecc,
    )?;
    gauge_list(
        enc,
        "gpumon_gpu_remapped_rows",
        "Remapped DRAM rows: state=corrected|uncorrected (rows), pending|failure (1 when a remap waits for a reset / failed).",
        &rows,
    )?;
    gauge_list(
        enc,
        "gpumon_gpu_retired_pages",
        "Retired memory pages (GPUs before Ampere): cause=single_bit|double_bit (pages), pending (1 when a retirement waits).",
        &pages,
    )?;
    let xids: Vec<(Labels, &Gpu)> = series
        .iter()
        .filter(|(_, g)| g.xid.is_some())
        .map(|(l, g)| (l.clone(), *g))
        .collect();
    gauges(
        enc,
        (
            "gpumon_gpu_xid_last_code",
            "The code of the GPU's last Xid error (absent until one is heard).",
            None,
        ),
        &xids,
        |g| g.xid.as_ref()?.last_code,
    )?;
    let seconds = Unit::Seconds;
    gauges(
        enc,
        (
            "gpumon_gpu_xid_last_timestamp",
            "When the GPU's last Xid error was heard, seconds since the epoch.",
            Some(&seconds),
        ),
        &xids,
        |g| {
            let at = humantime::parse_rfc3339_weak(&g.xid.as_ref()?.last_at).ok()?;
            Some(at.duration_since(UNIX_EPOCH).ok()?.as_secs_f64())
        },
    )?;
    let counts: Vec<(Labels, u64)> = xids
        .iter()
        .filter_map(|(l, g)| Some((l.clone(), g.xid.as_ref()?.count)))
        .collect();
    counters(
        enc,
        "gpumon_gpu_xid_events",
        "Xid errors heard since gpumon started (absent until one is heard, or where events cannot be heard).",
        &counts,
    )
}

/// Memory faults that are not OOMs, read from followed logs, by class (each class from the start).
pub(super) fn faults(
    enc: &mut DescriptorEncoder,
    failures: &BTreeMap<String, u64>,
    host: &str,
) -> fmt::Result {
    let series: Vec<(Labels, u64)> = FAULT_CLASSES
        .iter()
        .map(|c| {
            let labels = vec![
                ("Hostname", Cow::Borrowed(host)),
                ("class", Cow::Borrowed(*c)),
            ];
            (labels, failures.get(*c).copied().unwrap_or(0))
        })
        .collect();
    counters(
        enc,
        "gpumon_memory_faults",
        "CUDA memory faults that are not OOMs (illegal address, uncorrectable ECC, …) read from followed logs since gpumon started, by class.",
        &series,
    )
}

fn counters(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: &[(Labels<'_>, u64)],
) -> fmt::Result {
    if series.is_empty() {
        return Ok(());
    }
    let mut fam = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, n) in series {
        ConstCounter::new(*n).encode(fam.encode_family(labels)?)?;
    }
    Ok(())
}

/// A gauge family of integer values (absent when there is none).
fn gauge_list(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: &[(Labels<'_>, u64)],
) -> fmt::Result {
    let mut fam = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, n) in series {
        ConstGauge::new(i64::try_from(*n).unwrap_or(i64::MAX))
            .encode(fam.encode_family(labels)?)?;
    }
    Ok(())
}
