//! The on-disk shape of samples: `Option` fields plus an `unavailable` map of reasons.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    Framework, GpuSample, GpuStatus, Health, Memory, MigInstance, MigMemory, Placement, Pool,
    ProcessKind, ProcessSample, ProcessUtil, Rank, join, split,
};

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryWire {
    total: u64,
    used: u64,
    free: u64,
    reserved: Option<u64>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuWire {
    uuid: String,
    index: u32,
    name: String,
    pci_bus_id: Option<String>,
    status: GpuStatus,
    memory: Option<MemoryWire>,
    utilization: Option<u32>,
    temperature_c: Option<u32>,
    power_mw: Option<u32>,
    /// MIG instances; absent when MIG is off and in recordings made before it existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    mig: Vec<MigWire>,
    /// Memory health; absent where not read and in recordings made before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    health: Option<Health>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    unavailable: BTreeMap<String, String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigWire {
    uuid: String,
    profile: String,
    gpu_instance_id: u32,
    compute_instance_id: u32,
    memory: Option<MigMemory>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    unavailable: BTreeMap<String, String>,
}

impl From<MigInstance> for MigWire {
    fn from(m: MigInstance) -> Self {
        let mut na = BTreeMap::new();
        MigWire {
            memory: split(m.memory, "memory", &mut na),
            uuid: m.uuid,
            profile: m.profile,
            gpu_instance_id: m.gpu_instance_id,
            compute_instance_id: m.compute_instance_id,
            unavailable: na,
        }
    }
}

impl From<MigWire> for MigInstance {
    fn from(w: MigWire) -> Self {
        MigInstance {
            memory: join(w.memory, "memory", &w.unavailable),
            uuid: w.uuid,
            profile: w.profile,
            gpu_instance_id: w.gpu_instance_id,
            compute_instance_id: w.compute_instance_id,
        }
    }
}

impl From<GpuSample> for GpuWire {
    fn from(g: GpuSample) -> Self {
        let mut na = BTreeMap::new();
        let memory = split(g.memory, "memory", &mut na).map(|m| MemoryWire {
            total: m.total,
            used: m.used,
            free: m.free,
            reserved: split(m.reserved, "memory.reserved", &mut na),
        });
        GpuWire {
            pci_bus_id: split(g.pci_bus_id, "pci_bus_id", &mut na),
            memory,
            utilization: split(g.utilization, "utilization", &mut na),
            temperature_c: split(g.temperature_c, "temperature_c", &mut na),
            power_mw: split(g.power_mw, "power_mw", &mut na),
            mig: g.mig.into_iter().map(MigWire::from).collect(),
            health: g.health,
            uuid: g.uuid,
            index: g.index,
            name: g.name,
            status: g.status,
            unavailable: na,
        }
    }
}

impl From<GpuWire> for GpuSample {
    fn from(w: GpuWire) -> Self {
        let na = &w.unavailable;
        GpuSample {
            pci_bus_id: join(w.pci_bus_id, "pci_bus_id", na),
            memory: join(w.memory, "memory", na).map(|m| Memory {
                total: m.total,
                used: m.used,
                free: m.free,
                reserved: join(m.reserved, "memory.reserved", na),
            }),
            utilization: join(w.utilization, "utilization", na),
            temperature_c: join(w.temperature_c, "temperature_c", na),
            power_mw: join(w.power_mw, "power_mw", na),
            mig: w.mig.into_iter().map(MigInstance::from).collect(),
            health: w.health,
            uuid: w.uuid,
            index: w.index,
            name: w.name,
            status: w.status,
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessWire {
    pid: u32,
    gpu_uuid: String,
    kind: ProcessKind,
    device_memory: Option<u64>,
    /// Absent in recordings made before it existed ("not recorded").
    #[serde(default)]
    util: Option<ProcessUtil>,
    /// MIG instance ids; absent without MIG.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gpu_instance_id: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    compute_instance_id: Option<u32>,
    start_time: Option<u64>,
    user: Option<String>,
    command: Option<String>,
    vms: Option<u64>,
    rss: Option<u64>,
    framework: Option<Framework>,
    settings: Option<BTreeMap<String, String>>,
    /// Absent in recordings made before it existed ("not recorded").
    #[serde(default)]
    log: Option<Vec<String>>,
    /// Absent in recordings made before the allocator probe ("not recorded").
    #[serde(default)]
    pool: Option<Pool>,
    /// Absent in recordings made before containers were read ("not recorded").
    #[serde(default)]
    container: Option<Placement>,
    /// Absent for a process that is no rank of a distributed job, and in recordings made before
    /// ranks were read (`gpumon.recording/3` and older).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rank: Option<Rank>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    unavailable: BTreeMap<String, String>,
}

impl From<ProcessSample> for ProcessWire {
    fn from(p: ProcessSample) -> Self {
        let mut na = BTreeMap::new();
        ProcessWire {
            device_memory: split(p.device_memory, "device_memory", &mut na),
            util: split(p.util, "util", &mut na),
            gpu_instance_id: p.gpu_instance_id,
            compute_instance_id: p.compute_instance_id,
            start_time: split(p.start_time, "start_time", &mut na),
            user: split(p.user, "user", &mut na),
            command: split(p.command, "command", &mut na),
            vms: split(p.vms, "vms", &mut na),
            rss: split(p.rss, "rss", &mut na),
            framework: split(p.framework, "framework", &mut na),
            settings: split(p.settings, "settings", &mut na),
            log: split(p.log, "log", &mut na),
            pool: split(p.pool, "pool", &mut na),
            container: split(p.container, "container", &mut na),
            rank: p.rank,
            pid: p.pid,
            gpu_uuid: p.gpu_uuid,
            kind: p.kind,
            unavailable: na,
        }
    }
}

impl From<ProcessWire> for ProcessSample {
    fn from(w: ProcessWire) -> Self {
        let na = &w.unavailable;
        ProcessSample {
            device_memory: join(w.device_memory, "device_memory", na),
            util: join(w.util, "util", na),
            gpu_instance_id: w.gpu_instance_id,
            compute_instance_id: w.compute_instance_id,
            start_time: join(w.start_time, "start_time", na),
            user: join(w.user, "user", na),
            command: join(w.command, "command", na),
            vms: join(w.vms, "vms", na),
            rss: join(w.rss, "rss", na),
            framework: join(w.framework, "framework", na),
            settings: join(w.settings, "settings", na),
            log: join(w.log, "log", na),
            pool: join(w.pool, "pool", na),
            container: join(w.container, "container", na),
            rank: w.rank,
            pid: w.pid,
            gpu_uuid: w.gpu_uuid,
            kind: w.kind,
        }
    }
}
