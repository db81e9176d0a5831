//! One sample of the machine: GPUs, their processes and the host facts about each, with every
//! reading that could not be taken kept as `Unavailable` plus its reason (absent is not zero).
//!
//! These types are also the wire format of recordings and snapshots: a `Reading` that is
//! unavailable is written as `null`, and its reason goes into the object's `unavailable` map.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::oom::failure::Failure;

pub mod health;
pub mod job;
mod logs;
mod placement;
mod pool;
pub mod pool_map;
pub mod printable;
pub mod process_end;
pub mod ras;
pub mod request;
mod shift;
pub use health::{GpuEvent, Health};
pub use job::{Inside, Launcher, Rank};
pub use logs::LogBehind;
pub use placement::Placement;
pub use pool::Pool;
pub use pool_map::{PoolMap, ProbeNews};
pub use process_end::{EndHow, Frame, MainWhere, ProcessEnd, WhereNews};
pub use ras::{RasComm, RasRank, RasStatus};

/// A value that was read, or the reason it could not be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reading<T> {
    Value(T),
    Unavailable(String),
}

impl<T> Reading<T> {
    pub fn na(reason: impl Into<String>) -> Self {
        Reading::Unavailable(reason.into())
    }

    pub fn value(&self) -> Option<&T> {
        match self {
            Reading::Value(v) => Some(v),
            Reading::Unavailable(_) => None,
        }
    }

    pub fn reason(&self) -> Option<&str> {
        match self {
            Reading::Value(_) => None,
            Reading::Unavailable(r) => Some(r),
        }
    }

    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Reading<U> {
        match self {
            Reading::Value(v) => Reading::Value(f(v)),
            Reading::Unavailable(r) => Reading::Unavailable(r),
        }
    }

    pub fn as_ref(&self) -> Reading<&T> {
        match self {
            Reading::Value(v) => Reading::Value(v),
            Reading::Unavailable(r) => Reading::Unavailable(r.clone()),
        }
    }
}

impl<T: Copy> Reading<T> {
    pub fn get(&self) -> Option<T> {
        self.value().copied()
    }
}

impl<T, E: std::fmt::Display> From<Result<T, E>> for Reading<T> {
    fn from(r: Result<T, E>) -> Self {
        match r {
            Ok(v) => Reading::Value(v),
            Err(e) => Reading::Unavailable(e.to_string()),
        }
    }
}

/// Writes a reading as `Option<T>` and records the reason of a missing one under `key`.
pub(crate) fn split<T>(r: Reading<T>, key: &str, na: &mut BTreeMap<String, String>) -> Option<T> {
    match r {
        Reading::Value(v) => Some(v),
        Reading::Unavailable(reason) => {
            na.insert(key.to_string(), reason);
            None
        }
    }
}

/// Reads back what [`split`] wrote; a `null` without a reason is "not recorded".
pub(crate) fn join<T>(v: Option<T>, key: &str, na: &BTreeMap<String, String>) -> Reading<T> {
    match v {
        Some(v) => Reading::Value(v),
        None => Reading::Unavailable(
            na.get(key)
                .cloned()
                .unwrap_or_else(|| "not recorded".to_string()),
        ),
    }
}

/// Facts about the machine that do not change while gpumon runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineInfo {
    pub host: String,
    pub kernel: Option<String>,
    pub driver_version: Option<String>,
    pub nvml_version: Option<String>,
    /// CUDA driver API version, e.g. "13.0".
    pub cuda_version: Option<String>,
    /// Why no GPU is read at all (`gpumon run` goes on without NVML); `None` with NVML.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_gpu: Option<String>,
}

/// Device memory as NVML reports it, in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Memory {
    pub total: u64,
    /// With NVML v2 this excludes `reserved`; with v1 (drivers before R510) it includes it.
    pub used: u64,
    pub free: u64,
    /// Driver/firmware reserved memory (NVML v2 only).
    pub reserved: Reading<u64>,
}

/// Whether a GPU answered this sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum GpuStatus {
    Ok,
    /// The GPU did not answer (fallen off the bus, NVML error); its readings are unavailable.
    Lost {
        reason: String,
    },
}

/// One MIG instance of a GPU at one moment (a MIG device: a compute instance inside a GPU
/// instance, which owns the memory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigInstance {
    /// "MIG-…": the UUID CUDA_VISIBLE_DEVICES names it by.
    pub uuid: String,
    /// Its profile, e.g. "1g.18gb" (from the MIG device's name).
    pub profile: String,
    pub gpu_instance_id: u32,
    pub compute_instance_id: u32,
    /// Its GPU instance's memory.
    pub memory: Reading<MigMemory>,
}

/// A MIG instance's memory, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigMemory {
    pub total: u64,
    pub used: u64,
}

/// One GPU at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "wire::GpuWire", from = "wire::GpuWire")]
pub struct GpuSample {
    /// The key: identical boards share a name, never a UUID.
    pub uuid: String,
    /// NVML index, for display only.
    pub index: u32,
    pub name: String,
    pub pci_bus_id: Reading<String>,
    pub status: GpuStatus,
    pub memory: Reading<Memory>,
    /// GPU utilization, percent.
    pub utilization: Reading<u32>,
    pub temperature_c: Reading<u32>,
    pub power_mw: Reading<u32>,
    /// Its MIG instances, when MIG is on (empty when off or unsupported).
    pub mig: Vec<MigInstance>,
    /// Its memory health (ECC, remapped rows, retired pages); `None` where not read (a
    /// recording made before it existed, a host read through Prometheus without those series).
    pub health: Option<Health>,
}

/// How a process uses a GPU, as NVML lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcessKind {
    Compute,
    Graphics,
    ComputeGraphics,
}

/// The ML framework a process runs, from the libraries it has mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Framework {
    Pytorch,
    Tensorflow,
    Jax,
    Cupy,
    Other,
}

impl Framework {
    pub fn label(self) -> &'static str {
        match self {
            Framework::Pytorch => "torch",
            Framework::Tensorflow => "tf",
            Framework::Jax => "jax",
            Framework::Cupy => "cupy",
            Framework::Other => "other",
        }
    }

    /// Whether its allocator keeps every region it took until the process ends (XLA's and
    /// TensorFlow's BFC pools): its free part serves only itself.
    pub fn keeps_its_pool(self) -> bool {
        matches!(self, Framework::Jax | Framework::Tensorflow)
    }

    /// The name the allocator probe's files and the snapshot's `pool` use ("pytorch", …).
    pub fn pool_name(self) -> &'static str {
        match self {
            Framework::Pytorch => "pytorch",
            Framework::Tensorflow => "tensorflow",
            Framework::Jax => "jax",
            Framework::Cupy => "cupy",
            Framework::Other => "other",
        }
    }

    /// The framework a probe file or snapshot names; `None` for a name gpumon does not know.
    pub fn from_pool_name(name: &str) -> Option<Framework> {
        [
            Framework::Pytorch,
            Framework::Tensorflow,
            Framework::Jax,
            Framework::Cupy,
        ]
        .into_iter()
        .find(|f| f.pool_name() == name)
    }
}

/// A process's share of a GPU's engines over NVML's last sample period, percent (NVML's
/// process utilisation samples; what `nvidia-smi pmon` shows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessUtil {
    /// Streaming multiprocessors (3D / compute).
    pub sm: u32,
    /// Memory controller (frame buffer reads and writes).
    pub memory: u32,
    pub encoder: u32,
    pub decoder: u32,
}

/// One process on one GPU at one moment: NVML's view plus what /proc says about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "wire::ProcessWire", from = "wire::ProcessWire")]
pub struct ProcessSample {
    pub pid: u32,
    pub gpu_uuid: String,
    pub kind: ProcessKind,
    /// Device memory NVML attributes to the process (n/a under WDDM, some vGPU and MIG setups).
    pub device_memory: Reading<u64>,
    /// Its utilisation of the GPU (n/a where the GPU or driver has no process samples).
    pub util: Reading<ProcessUtil>,
    /// The MIG GPU and compute instance it runs in (NVML's `ProcessInfo`); `None` without MIG.
    pub gpu_instance_id: Option<u32>,
    pub compute_instance_id: Option<u32>,
    /// Process start, seconds since the epoch; with `pid` it identifies the process.
    pub start_time: Reading<u64>,
    pub user: Reading<String>,
    pub command: Reading<String>,
    /// Host virtual memory size (VmSize), bytes.
    pub vms: Reading<u64>,
    /// Host resident set size (VmRSS), bytes.
    pub rss: Reading<u64>,
    pub framework: Reading<Framework>,
    /// Memory-related variables of the process's initial environment (name -> value).
    pub settings: Reading<BTreeMap<String, String>>,
    /// The files its stdout/stderr go to, which gpumon follows for failures; n/a says why not
    /// ("not a file (stdout is a pipe, …)", "not readable (permission denied)").
    pub log: Reading<Vec<String>>,
    /// Its framework's memory pool on this GPU, read by the allocator probe inside it; n/a says
    /// why not (not started with the probe, a file gpumon did not trust, …).
    pub pool: Reading<Pool>,
    /// Its container, pod, Slurm job or service (read once per process).
    pub container: Reading<Placement>,
    /// Its place in a distributed job; `None` when it is no rank of one (no launcher variables
    /// and no probe that saw a process group), or its environment could not be read (`settings`
    /// then says why: the job is unknown, never guessed).
    pub rank: Option<Rank>,
}

/// Everything gathered in one tick.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// When the sample was taken, milliseconds since the Unix epoch.
    pub at_ms: u64,
    pub gpus: Vec<GpuSample>,
    pub processes: Vec<ProcessSample>,
    /// Allocation failures read from logs since the previous sample.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<Failure>,
    /// Things the source ignored and says once (a probe file it did not trust, and why).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
    /// The GPUs' events heard since the previous sample (Xid errors, ECC and remap events).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<GpuEvent>,
    /// What probes said besides their figures, only when it changed: a new block map, an answer
    /// to a request, recording turned on or off, a process's end, where its main thread stands
    /// (absent in recordings made before maps).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<ProbeNews>,
    /// NCCL's RAS service's answer, in the sample after it came (read every 10 s at most, and
    /// only while a distributed job runs); absent otherwise and in older recordings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ras: Option<RasStatus>,
    /// The followed logs this sample's poll left unread to their end, with their backlog (absent
    /// when every log is caught up, and in older recordings).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub logs: Vec<LogBehind>,
}

mod wire;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unavailable_fields_are_null_with_a_reason() {
        let g = GpuSample {
            uuid: "GPU-1".into(),
            index: 0,
            name: "H200".into(),
            pci_bus_id: Reading::Value("00000000:19:00.0".into()),
            status: GpuStatus::Ok,
            memory: Reading::Value(Memory {
                total: 100,
                used: 10,
                free: 90,
                reserved: Reading::na("NVML v1 (driver before R510): used includes reserved"),
            }),
            utilization: Reading::Value(3),
            temperature_c: Reading::na("NotSupported"),
            power_mw: Reading::Value(120_489),
            mig: Vec::new(),
            health: None,
        };
        let json = serde_json::to_value(&g).unwrap();
        assert_eq!(json["temperature_c"], serde_json::Value::Null);
        assert_eq!(json["memory"]["reserved"], serde_json::Value::Null);
        assert_eq!(json["unavailable"]["temperature_c"], "NotSupported");
        let back: GpuSample = serde_json::from_value(json).unwrap();
        assert_eq!(back, g);
    }

    #[test]
    fn a_process_log_is_null_with_a_reason_and_optional_in_old_recordings() {
        let old = r#"{"pid":1,"gpu_uuid":"GPU-1","kind":"compute","device_memory":1,"start_time":2,"user":"u","command":"c","vms":3,"rss":4,"framework":"jax","settings":{}}"#;
        let p: ProcessSample = serde_json::from_str(old).unwrap();
        assert_eq!(p.log, Reading::na("not recorded"));
        assert_eq!(p.util, Reading::na("not recorded"));
        let pipe = ProcessSample {
            log: Reading::na("not a file (stdout is a pipe, stderr is a terminal)"),
            ..p.clone()
        };
        let json = serde_json::to_value(&pipe).unwrap();
        assert_eq!(json["log"], serde_json::Value::Null);
        assert_eq!(
            json["unavailable"]["log"],
            "not a file (stdout is a pipe, stderr is a terminal)"
        );
        assert_eq!(serde_json::from_value::<ProcessSample>(json).unwrap(), pipe);
        let file = ProcessSample {
            log: Reading::Value(vec!["/tmp/a.log".into()]),
            ..p
        };
        let json = serde_json::to_value(&file).unwrap();
        assert_eq!(json["log"][0], "/tmp/a.log");
    }
}
