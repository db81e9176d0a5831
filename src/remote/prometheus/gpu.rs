//! A GPU's sample from its Prometheus series: gpumon's memory figures where it has them, else
//! dcgm-exporter's (MiB, already scaled), and its memory health.

use super::{GpuAcc, health};
use crate::sample::{GpuSample, GpuStatus, Memory, Reading};

pub(super) fn sample(uuid: String, g: GpuAcc) -> GpuSample {
    let (m, scale) = if g.gpumon.contains_key("used") {
        (&g.gpumon, "gpumon")
    } else {
        (&g.dcgm, "dcgm")
    };
    let reserved = m.get("reserved").copied();
    let memory = match (m.get("used"), m.get("free")) {
        (Some(&used), Some(&free)) => Reading::Value(Memory {
            total: m
                .get("total")
                .copied()
                .unwrap_or(used + free + reserved.unwrap_or(0)),
            used,
            free,
            reserved: reserved.map_or_else(
                || Reading::na(format!("not in Prometheus ({scale})")),
                Reading::Value,
            ),
        }),
        _ => Reading::na("Prometheus has no used and free memory series for this GPU"),
    };
    const NOT_QUERIED: &str = "not queried from Prometheus";
    GpuSample {
        uuid,
        index: g.index,
        name: if g.name.is_empty() {
            "GPU".into()
        } else {
            g.name
        },
        pci_bus_id: Reading::na(NOT_QUERIED),
        status: GpuStatus::Ok,
        memory,
        utilization: Reading::na(NOT_QUERIED),
        temperature_c: Reading::na(NOT_QUERIED),
        power_mw: Reading::na(NOT_QUERIED),
        mig: Vec::new(),
        health: health::reading(&g.health),
    }
}
