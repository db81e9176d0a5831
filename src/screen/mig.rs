//! The MIG rows of the GPU block: each MIG instance of the machine in view with the number of
//! its processes (those NVML lists with its GPU instance id), derived in the screen's update.

use crate::model::Machine;
use crate::sample::MigInstance;

/// One MIG instance under its GPU's bar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigRow {
    pub gpu_uuid: String,
    pub instance: MigInstance,
    /// Running processes NVML attributes to its GPU instance.
    pub processes: usize,
}

/// Every MIG instance of `machine`'s GPUs, in GPU index then instance order.
pub fn rows(machine: &Machine) -> Vec<MigRow> {
    let mut out = Vec::new();
    for g in machine.gpus_in_order() {
        for m in &g.sample.mig {
            let processes = machine
                .processes
                .values()
                .filter(|t| t.exited_ms.is_none() && t.sample.gpu_uuid == g.sample.uuid)
                .filter(|t| t.sample.gpu_instance_id == Some(m.gpu_instance_id))
                .count();
            out.push(MigRow {
                gpu_uuid: g.sample.uuid.clone(),
                instance: m.clone(),
                processes,
            });
        }
    }
    out
}
