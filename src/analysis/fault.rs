//! The alert for a job's memory fault that is not an OOM (an illegal or misaligned address, an
//! uncorrectable ECC error, a launch failure, a device-side assert), joined with the Xid the
//! driver reported for it when there is one: the same pid, or the same GPU, within `JOIN_MS`.
//! The Xid says whose fault it was (31 and 43: the program; 48, 94, 95: the GPU's memory).

use crate::analysis::context::Context;
use crate::analysis::gpu_events::{JOIN_MS, gpu_label, remedy};
use crate::model::health::Trouble;
use crate::model::units::clock;
use crate::model::{Alert, Level, Machine};
use crate::oom::failure::FaultKind;
use crate::oom::failure::{Dialect, Failure};
use crate::oom::xid::{self, Blame};
use crate::sample::GpuEvent;

/// How long a memory fault read from a log waits for the Xid the driver reports for it. The event
/// sources join NVML's and the kernel log's reports of one Xid within 5 s
/// (`source::events::SAME_XID_MS`), so the Xid can come seconds after the job's own error (2.1 s
/// for a misaligned address on an H100).
pub const XID_WAIT_MS: u64 = 7_000;

/// Whether fault `f` waits for its Xid at `at_ms`: it is a memory fault, no Xid near it has been
/// heard, and it has waited less than `XID_WAIT_MS`.
pub fn waits_for_xid(f: &Failure, machine: &Machine, at_ms: u64) -> bool {
    f.fault.is_some()
        && at_ms < f.at_ms.saturating_add(XID_WAIT_MS)
        && xid_near(
            machine.events.iter(),
            f.pid,
            Context::from_machine(f, machine).gpu_uuid.as_deref(),
            f.at_ms,
        )
        .is_none()
}

/// The Xid of `pid` (or else of GPU `uuid`) nearest `at_ms` within `JOIN_MS`. A fault known by
/// neither (a log given with `--log`, no process behind it) takes the nearest Xid when every Xid
/// of that time is on one GPU.
pub fn xid_near<'a>(
    events: impl Iterator<Item = &'a GpuEvent>,
    pid: Option<u32>,
    uuid: Option<&str>,
    at_ms: u64,
) -> Option<&'a GpuEvent> {
    let near: Vec<&GpuEvent> = events
        .filter(|e| e.xid().is_some() && e.at_ms.abs_diff(at_ms) <= JOIN_MS)
        .collect();
    let nearest = |v: Vec<&'a GpuEvent>| v.into_iter().min_by_key(|e| e.at_ms.abs_diff(at_ms));
    let matched: Vec<&GpuEvent> = near
        .iter()
        .copied()
        .filter(|e| match (e.pid, pid) {
            (Some(x), Some(y)) => x == y,
            _ => uuid.is_some() && e.gpu_uuid.as_deref() == uuid,
        })
        .collect();
    if !matched.is_empty() {
        return nearest(matched);
    }
    let one_gpu = near.first().is_some_and(|first| {
        first.gpu_uuid.is_some() && near.iter().all(|e| e.gpu_uuid == first.gpu_uuid)
    });
    (pid.is_none() && uuid.is_none() && one_gpu)
        .then(|| nearest(near))
        .flatten()
}

/// The alert for `f`, a fault of `kind`.
pub fn alert(f: &Failure, kind: FaultKind, machine: &Machine) -> Alert {
    let ctx = Context::from_machine(f, machine);
    let xid = xid_near(
        machine.events.iter(),
        f.pid,
        ctx.gpu_uuid.as_deref(),
        f.at_ms,
    );
    let uuid = ctx
        .gpu_uuid
        .clone()
        .or_else(|| xid.and_then(|e| e.gpu_uuid.clone()));
    let gpu = gpu_label(uuid.as_deref(), xid.and_then(|e| e.pci.as_deref()), machine);
    let troubles = uuid
        .as_deref()
        .and_then(|u| machine.gpus.get(u))
        .map(|g| g.troubles.clone())
        .unwrap_or_default();
    let who = f
        .pid
        .map_or_else(|| "the process".to_string(), |p| format!("pid {p}"));
    let code = xid.and_then(GpuEvent::xid);
    let blame = match (code.and_then(xid::meaning), kind) {
        (Some(m), _) => m.blame,
        (None, FaultKind::UncorrectableEcc) => Blame::Memory,
        (None, _) => Blame::Program,
    };
    let mut title = match (xid, blame) {
        (Some(_), Blame::Program) => format!(
            "{} (Xid {}) in {who}: a bug in the program or one of its kernels, not the GPU",
            kind.words(),
            code.unwrap_or_default()
        ),
        (Some(e), _) => format!(
            "{who} died of {} on {gpu} (Xid {} at {})",
            kind.words(),
            code.unwrap_or_default(),
            clock(e.at_ms)
        ),
        (None, Blame::Memory) => {
            format!(
                "{who} died of {} on {gpu} (no Xid heard for it)",
                kind.words()
            )
        }
        (None, _) => format!(
            "{} in {who} on {gpu}: most often a bug in the program or one of its kernels (no Xid heard to say more)",
            kind.words()
        ),
    };
    if blame == Blame::Memory && troubles.contains(&Trouble::RemapPending) {
        title.push_str(&format!(
            "; {gpu} has a row remap pending: reset it before the next job"
        ));
    }
    let dialect = f.source.map_or("CUDA", Dialect::label);
    let mut evidence = vec![format!("{dialect}: {}", f.message)];
    if let Some(m) = code.and_then(xid::meaning) {
        evidence.push(format!("Xid {}: {}", code.unwrap_or_default(), m.words));
    }
    if let Some(d) = xid.and_then(|e| e.detail.as_deref()) {
        evidence.push(format!("the driver said: {d}"));
    }
    evidence.extend(troubles.iter().map(|t| format!("{gpu} now: {}", t.words())));
    evidence.push(super::late::place(f));
    Alert {
        at_ms: f.at_ms,
        gpu_uuid: uuid,
        pid: f.pid,
        level: Level::Failure,
        class: kind.as_str().into(),
        confidence: Some(if xid.is_some() { "certain" } else { "likely" }.into()),
        title,
        evidence,
        remedy: Some(remedy(code, Some(blame), &gpu, &troubles)),
        job: None,
    }
}
