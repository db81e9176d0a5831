//! Pure conversions from nvml-wrapper types and errors to gpumon's readings, tested without a GPU.

use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::struct_wrappers::device::{MemoryInfo, ProcessInfo};

use crate::source::{GpuProcess, GpuSample, GpuStatus, Memory, ProcessKind, Reading};

/// The start-up message when NVML works but lists no GPU.
pub const NO_GPU: &str = "no NVIDIA GPU found (NVML lists 0 devices)";

/// Why reserved memory is n/a on drivers without NVML v2 memory info.
pub const V1_RESERVED: &str = "NVML v1 (driver before R510): used includes reserved";

/// Why a process's device memory is n/a when NVML reports `NVML_VALUE_NOT_AVAILABLE`.
pub const MEMORY_NOT_REPORTED: &str = "not reported by the driver (WDDM, some vGPU and MIG setups)";

/// A process's utilisation until `utilization::apply` has read it.
pub const UTIL_NOT_READ: &str = "not read";

/// Linux's largest possible PID (`PID_MAX_LIMIT` on 64-bit); anything above is garbage.
const PID_MAX_LIMIT: u32 = 4_194_304;

/// One line a person understands for an `Nvml::init()` or start-up `device_count()` failure;
/// `lib` is the library `GPUMON_NVML_LIB` named, when it named one (the message names it).
pub fn startup_message(e: &NvmlError, lib: Option<&std::ffi::OsStr>) -> String {
    let named = lib.map(|l| std::path::Path::new(l).display().to_string());
    match (e, named) {
        (NvmlError::LibloadingError(why), Some(lib)) => {
            let why = why.to_string().replace('\n', " ");
            format!(
                "NVML library not found: {lib}, named by GPUMON_NVML_LIB, cannot be loaded \
                 ({why})"
            )
        }
        (NvmlError::LibloadingError(_) | NvmlError::LibraryNotFound, _) => {
            "NVML library not found (libnvidia-ml.so.1 missing): no NVIDIA driver installed".into()
        }
        // Not even NVML's first call: the library is no NVML at all.
        (NvmlError::FailedToLoadSymbol(s), named) if s.contains("nvmlInit") => format!(
            "{} is not an NVML library (it has no nvmlInit_v2){}",
            named.as_deref().unwrap_or("libnvidia-ml.so.1"),
            if lib.is_some() {
                ", named by GPUMON_NVML_LIB"
            } else {
                ""
            }
        ),
        (NvmlError::FailedToLoadSymbol(s), Some(lib)) => {
            format!("the NVML library {lib}, named by GPUMON_NVML_LIB, is too old for gpumon: {s}")
        }
        (e, _) => other_startup_message(e),
    }
}

/// The start-up failures whose words do not depend on the library named.
fn other_startup_message(e: &NvmlError) -> String {
    match e {
        NvmlError::LibloadingError(_) | NvmlError::LibraryNotFound => {
            "NVML library not found (libnvidia-ml.so.1 missing): no NVIDIA driver installed".into()
        }
        NvmlError::DriverNotLoaded => {
            "NVIDIA driver not loaded (the nvidia kernel module is not running)".into()
        }
        NvmlError::NoPermission => {
            "no permission to use the NVIDIA driver (check access to /dev/nvidia*)".into()
        }
        NvmlError::LibRmVersionMismatch => {
            "NVIDIA driver and NVML library versions differ (reboot after a driver upgrade)".into()
        }
        NvmlError::FailedToLoadSymbol(s) => format!("NVML library too old for gpumon: {s}"),
        other => format!("NVML could not start: {other}"),
    }
}

/// A short reason for a reading NVML could not give.
pub fn reason(e: &NvmlError) -> String {
    match e {
        NvmlError::NotSupported => "not supported on this GPU".into(),
        NvmlError::NoPermission => "no permission".into(),
        NvmlError::Timeout => "timed out".into(),
        NvmlError::FailedToLoadSymbol(_) | NvmlError::FunctionNotFound => {
            "not available in this driver version".into()
        }
        NvmlError::GpuLost => "GPU fell off the bus".into(),
        NvmlError::ResetRequired => "GPU needs a reset".into(),
        NvmlError::DriverNotLoaded => "NVIDIA driver not loaded".into(),
        NvmlError::Uninitialized => "NVML not initialised".into(),
        NvmlError::InvalidArg => "invalid device handle".into(),
        NvmlError::InsufficientPower => "external power cables not attached".into(),
        NvmlError::NotFound | NvmlError::NoData => "no data".into(),
        NvmlError::LibRmVersionMismatch => "driver/library version mismatch".into(),
        NvmlError::Unknown => "unknown driver error".into(),
        other => other.to_string(),
    }
}

/// Whether an error from a core query means the GPU itself is unusable (not just one field).
pub fn is_lost(e: &NvmlError) -> bool {
    matches!(
        e,
        NvmlError::GpuLost
            | NvmlError::ResetRequired
            | NvmlError::Unknown
            | NvmlError::Uninitialized
            | NvmlError::InvalidArg
            | NvmlError::DriverNotLoaded
            | NvmlError::LibRmVersionMismatch
            | NvmlError::IrqIssue
            | NvmlError::OperatingSystem
            | NvmlError::UnexpectedVariant(_)
    )
}

/// Memory as read; n/a with the reason after a per-field error; `Err(reason)` when the error
/// means the GPU itself is lost (see [`is_lost`]).
pub fn memory_reading(r: Result<Memory, NvmlError>) -> Result<Reading<Memory>, String> {
    match r {
        Ok(m) => Ok(Reading::Value(m)),
        Err(e) if is_lost(&e) => Err(reason(&e)),
        Err(e) => Ok(Reading::na(reason(&e))),
    }
}

/// A field's reading, or the short reason it failed.
pub fn field<T>(r: Result<T, NvmlError>) -> Reading<T> {
    r.map_or_else(|e| Reading::Unavailable(reason(&e)), Reading::Value)
}

/// CUDA driver API version as NVML gives it (e.g. 13000, 12040) to "13.0", "12.4".
pub fn cuda_version(v: i32) -> Option<String> {
    (v > 0).then(|| format!("{}.{}", v / 1000, (v % 1000) / 10))
}

/// NVML v2 memory info: `used` excludes `reserved`.
pub fn memory_v2(m: &MemoryInfo) -> Memory {
    Memory {
        total: m.total,
        used: m.used,
        free: m.free,
        reserved: Reading::Value(m.reserved),
    }
}

/// NVML v1 memory info (`total`, `free`, `used`): `used` includes the reserved part.
pub fn memory_v1(total: u64, free: u64, used: u64) -> Memory {
    Memory {
        total,
        used,
        free,
        reserved: Reading::na(V1_RESERVED),
    }
}

/// A process's device memory; NVML's "not available" is n/a, never 0.
pub fn device_memory(m: &UsedGpuMemory) -> Reading<u64> {
    match m {
        UsedGpuMemory::Used(b) => Reading::Value(*b),
        UsedGpuMemory::Unavailable => Reading::na(MEMORY_NOT_REPORTED),
    }
}

/// Whether an entry can be real. Early R535 drivers write 32-byte entries into the 24-byte array
/// nvml-wrapper reads, which shows up as PID 0, impossible PIDs, or more memory than the GPU has.
pub fn plausible(p: &ProcessInfo, total: Option<u64>) -> bool {
    let pid_ok = (1..=PID_MAX_LIMIT).contains(&p.pid);
    let mem_ok = match (&p.used_gpu_memory, total) {
        (UsedGpuMemory::Used(b), Some(t)) => *b <= t,
        _ => true,
    };
    pid_ok && mem_ok
}

/// Most processes a list may hold on a driver with the R535 stride bug: the driver writes
/// 32-byte entries into nvml-wrapper's array of (count + 5) 24-byte ones, which overflows once
/// 32·n > 24·(count + 5), i.e. n > 15; 12 leaves room for processes starting between the calls.
const STRIDE_BUG_SAFE_COUNT: u32 = 12;

/// One process list of a GPU (compute or graphics), through `v3`, or `v2` where the driver
/// predates R510; empty where it cannot be read (that GPU's processes are absent, not the GPU).
/// On a driver with the stride bug a list longer than [`STRIDE_BUG_SAFE_COUNT`] would overrun
/// nvml-wrapper's buffer, so it is left unread.
pub fn process_list(
    stride_bug: bool,
    count: impl FnOnce() -> Result<u32, NvmlError>,
    v3: impl FnOnce() -> Result<Vec<ProcessInfo>, NvmlError>,
    v2: impl FnOnce() -> Result<Vec<ProcessInfo>, NvmlError>,
) -> Vec<ProcessInfo> {
    if stride_bug && !count().is_ok_and(|n| n <= STRIDE_BUG_SAFE_COUNT) {
        return Vec::new();
    }
    match v3() {
        Ok(list) => list,
        Err(NvmlError::FailedToLoadSymbol(_)) => v2().unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

/// Appends one GPU's processes to `out`, dropping implausible entries (see [`plausible`]).
///
/// A PID in both lists becomes `ComputeGraphics` with the larger known memory (both lists give
/// the process's whole use). A PID twice in one list (once per MIG instance) has its memory summed.
pub fn merge_processes(
    uuid: &str,
    total: Option<u64>,
    compute: &[ProcessInfo],
    graphics: &[ProcessInfo],
    out: &mut Vec<GpuProcess>,
) {
    let start = out.len();
    for (list, kind) in [
        (compute, ProcessKind::Compute),
        (graphics, ProcessKind::Graphics),
    ] {
        let list_start = out.len();
        for p in list.iter().filter(|p| plausible(p, total)) {
            let memory = device_memory(&p.used_gpu_memory);
            match out[start..].iter().position(|q| q.pid == p.pid) {
                None => out.push(GpuProcess {
                    pid: p.pid,
                    gpu_uuid: uuid.to_string(),
                    kind,
                    device_memory: memory,
                    util: Reading::na(UTIL_NOT_READ),
                    gpu_instance_id: p.gpu_instance_id,
                    compute_instance_id: p.compute_instance_id,
                }),
                Some(i) => {
                    let q = &mut out[start + i];
                    let same_list = start + i >= list_start;
                    if !same_list {
                        q.kind = ProcessKind::ComputeGraphics;
                    }
                    q.device_memory = combine(&q.device_memory, memory, same_list);
                }
            }
        }
    }
}

/// Sum (same list) or larger (across lists) of two memory readings. A sum with an n/a part is
/// n/a; for the larger, a known value beats n/a.
fn combine(a: &Reading<u64>, b: Reading<u64>, sum: bool) -> Reading<u64> {
    match (a.get(), b.get()) {
        (Some(x), Some(y)) => Reading::Value(if sum { x.saturating_add(y) } else { x.max(y) }),
        (Some(_), None) if !sum => a.clone(),
        (None, Some(_)) if !sum => b,
        (None, _) => a.clone(),
        (Some(_), None) => b,
    }
}

/// What gpumon remembers of a GPU so that it can still be listed after it is lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub uuid: String,
    pub name: String,
    pub pci_bus_id: Reading<String>,
}

/// A GPU that did not answer: listed with what was known of it and every reading n/a.
pub fn lost_gpu(index: u32, known: Option<&Identity>, why: String) -> GpuSample {
    let (uuid, name, pci_bus_id) = match known {
        Some(id) => (id.uuid.clone(), id.name.clone(), id.pci_bus_id.clone()),
        None => (
            format!("unknown-uuid-gpu{index}"),
            "unknown GPU".to_string(),
            Reading::na(why.clone()),
        ),
    };
    GpuSample {
        uuid,
        index,
        name,
        pci_bus_id,
        memory: Reading::na(why.clone()),
        utilization: Reading::na(why.clone()),
        temperature_c: Reading::na(why.clone()),
        power_mw: Reading::na(why.clone()),
        mig: Vec::new(),
        health: Some(crate::sample::Health::unavailable(&why)),
        status: GpuStatus::Lost { reason: why },
    }
}

#[cfg(test)]
mod tests;
