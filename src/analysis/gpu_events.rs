//! An alert for each GPU event (an Xid, an uncorrectable ECC error, a row remap or its failure):
//! what the code means in words, the process the kernel named, the GPU's health now, and a job's
//! memory fault read from its log near the same time on the same GPU (or by the same pid).

use crate::model::health::Trouble;
use crate::model::units::clock;
use crate::model::{Alert, Level, Machine};
use crate::oom::xid::{self, Blame};
use crate::sample::GpuEvent;
use crate::sample::health::{EventOrigin, GpuEventKind};

/// A fault in a log and an Xid this close together (either first) are one failure.
pub const JOIN_MS: u64 = 60_000;

/// The classes of the alerts for a job's memory faults (see `fault.rs`).
pub const FAULT_CLASSES: [&str; 5] = [
    "illegal-address",
    "misaligned-address",
    "uncorrectable-ecc",
    "launch-failure",
    "device-assert",
];

/// The classes of the alerts about a GPU's health and events (not risks to a job's memory).
pub const HEALTH_CLASSES: [&str; 8] = [
    "xid",
    "ecc-uncorrected-event",
    "remap-event",
    "remap-failure-event",
    "remap-failure",
    "remap-pending",
    "retirement-pending",
    "ecc-uncorrected",
];

/// One alert per event; `faults`: the memory faults raised with them (joined as already raised
/// ones are).
pub fn alerts(events: &[GpuEvent], machine: &Machine, faults: &[Alert]) -> Vec<Alert> {
    events.iter().map(|e| alert(e, machine, faults)).collect()
}

/// "GPU2", or how a GPU no longer listed is known.
pub fn gpu_label(uuid: Option<&str>, pci: Option<&str>, machine: &Machine) -> String {
    match (uuid.and_then(|u| machine.gpus.get(u)), pci) {
        (Some(g), _) => format!("GPU{}", g.sample.index),
        (None, Some(pci)) => format!("the GPU at PCI {pci} (not listed by NVML)"),
        (None, None) => "a GPU NVML no longer lists".to_string(),
    }
}

fn alert(e: &GpuEvent, machine: &Machine, faults: &[Alert]) -> Alert {
    let gpu = gpu_label(e.gpu_uuid.as_deref(), e.pci.as_deref(), machine);
    let troubles = e
        .gpu_uuid
        .as_deref()
        .and_then(|u| machine.gpus.get(u))
        .map(|g| g.troubles.clone())
        .unwrap_or_default();
    let who = match (e.pid, &e.process) {
        (Some(pid), Some(name)) => format!(", pid {pid} ({name})"),
        (Some(pid), None) => format!(", pid {pid}"),
        _ => String::new(),
    };
    let (class, what, level, remedy) = match e.kind {
        GpuEventKind::Xid { code } => {
            let meaning = code.and_then(xid::meaning);
            let level = match meaning.map(|m| (m.blame, code)) {
                Some((Blame::Cleanup, _)) => Level::Info,
                Some((_, Some(92))) => Level::Suspected,
                _ => Level::Failure,
            };
            let remedy = remedy(code, meaning.map(|m| m.blame), &gpu, &troubles);
            ("xid", xid::label(code), level, remedy)
        }
        GpuEventKind::EccUncorrected => (
            "ecc-uncorrected-event",
            "an uncorrectable ECC error".to_string(),
            Level::Failure,
            remedy(None, Some(Blame::Memory), &gpu, &troubles),
        ),
        GpuEventKind::Remap => (
            "remap-event",
            "a row remap".to_string(),
            Level::Suspected,
            remedy(Some(63), Some(Blame::Memory), &gpu, &troubles),
        ),
        GpuEventKind::RemapFailure => (
            "remap-failure-event",
            "a failed row remap".to_string(),
            Level::Failure,
            remedy(Some(64), Some(Blame::Memory), &gpu, &troubles),
        ),
    };
    let mut evidence = Vec::new();
    if let Some(m) = e.xid().and_then(xid::meaning) {
        evidence.push(m.words.to_string());
    }
    evidence.push(match e.origin {
        EventOrigin::Nvml => "heard from NVML's event wait".to_string(),
        EventOrigin::Kernel => "read from the kernel log (NVRM)".to_string(),
    });
    if let Some(d) = &e.detail {
        evidence.push(format!("the driver said: {d}"));
    }
    evidence.extend(troubles.iter().map(|t| format!("{gpu} now: {}", t.words())));
    if let Some(f) = joined_fault(faults.iter().chain(&machine.alerts), e) {
        evidence.push(format!("near it, in a log: {}", f.title));
    }
    Alert {
        at_ms: e.at_ms,
        gpu_uuid: e.gpu_uuid.clone(),
        pid: e.pid,
        level,
        class: class.into(),
        confidence: None,
        title: format!("{what} on {gpu} at {}{who}", clock(e.at_ms)),
        evidence,
        remedy: Some(remedy),
        job: None,
    }
}

/// A job's memory fault among `alerts` near `e` (same pid, or same GPU), if any.
fn joined_fault<'a>(
    mut alerts: impl Iterator<Item = &'a Alert>,
    e: &GpuEvent,
) -> Option<&'a Alert> {
    alerts.find(|a| {
        FAULT_CLASSES.contains(&a.class.as_str())
            && a.at_ms.abs_diff(e.at_ms) <= JOIN_MS
            && match (e.pid, a.pid) {
                (Some(x), Some(y)) => x == y,
                _ => e.gpu_uuid.is_some() && a.gpu_uuid == e.gpu_uuid,
            }
    })
}

/// What to do after an Xid of `code` (or an ECC / remap event) on `gpu`, given its health now.
pub fn remedy(code: Option<u64>, blame: Option<Blame>, gpu: &str, troubles: &[Trouble]) -> String {
    if troubles.contains(&Trouble::RemapFailure) || code == Some(64) {
        return format!(
            "{gpu} could not remap a bad row (no spare rows left): take it out of service and have it checked"
        );
    }
    let reset = format!(
        "reset {gpu} once no process uses it (nvidia-smi -r), before the next job: a pending remap takes effect at the reset"
    );
    match blame {
        Some(Blame::Program) => "a bug in the program or one of its kernels, not the GPU: run it again with CUDA_LAUNCH_BLOCKING=1, or under compute-sanitizer, to find the kernel".to_string(),
        Some(Blame::Memory) if code == Some(92) => format!(
            "{gpu}'s memory still works; watch its corrected ECC errors (gpumon_gpu_ecc_errors_total) and remapped rows"
        ),
        Some(Blame::Memory) if troubles.contains(&Trouble::RemapPending) => reset,
        Some(Blame::Memory) => format!(
            "reset {gpu} once no process uses it (nvidia-smi -r); if the errors come back, have it checked"
        ),
        Some(Blame::Hardware) if code == Some(79) => format!(
            "{gpu} stopped answering: every process on it is lost; check the node (dmesg, power, PCIe) and reboot it"
        ),
        Some(Blame::Hardware) => "check the GPU's NVLink links (nvidia-smi nvlink -s) and the node".to_string(),
        Some(Blame::Driver) => format!(
            "the driver or {gpu}'s firmware failed: check the driver version; reset the GPU or reboot the node if it stops answering"
        ),
        Some(Blame::Cleanup) => "the cause is an earlier error or a killed process: see the alerts before it".to_string(),
        None => "look the code up in NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors)".to_string(),
    }
}

#[cfg(test)]
mod tests;
