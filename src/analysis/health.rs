//! Alerts for what a GPU's memory health says (a row remap pending or failed, a page retirement
//! pending, uncorrected ECC errors since the driver loaded), each raised once per GPU.

use crate::analysis::gpu_events::remedy;
use crate::model::health::Trouble;
use crate::model::{Alert, Level, Machine};
use crate::oom::xid::Blame;

/// The alerts for troubles not yet raised on their GPU.
pub fn alerts(machine: &Machine, at_ms: u64) -> Vec<Alert> {
    let mut out = Vec::new();
    for g in machine.gpus_in_order() {
        let gpu = format!("GPU{}", g.sample.index);
        for t in &g.troubles {
            let (class, level, code) = match t {
                Trouble::RemapFailure => ("remap-failure", Level::Failure, Some(64)),
                Trouble::RemapPending => ("remap-pending", Level::Suspected, Some(63)),
                Trouble::RetirementPending => ("retirement-pending", Level::Suspected, Some(63)),
                Trouble::Uncorrected(_) => ("ecc-uncorrected", Level::Suspected, None),
                Trouble::EccOff | Trouble::EccChanging(_) => continue,
            };
            let raised = machine
                .alerts
                .iter()
                .any(|a| a.class == class && a.gpu_uuid.as_deref() == Some(&g.sample.uuid));
            if raised {
                continue;
            }
            let fewer = match t {
                Trouble::RemapPending | Trouble::RetirementPending => {
                    vec!["until the reset, the bad row or page is unusable and jobs placed on the GPU may fail in ways that look like bugs".to_string()]
                }
                _ => Vec::new(),
            };
            out.push(Alert {
                at_ms,
                gpu_uuid: Some(g.sample.uuid.clone()),
                pid: None,
                level,
                class: class.into(),
                confidence: None,
                title: format!("{gpu}: {}", t.words()),
                evidence: fewer,
                remedy: Some(remedy(code, Some(Blame::Memory), &gpu, &g.troubles)),
                job: None,
            });
        }
    }
    out
}
