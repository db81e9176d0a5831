//! The GPU side of the live source, from NVML (nvml-wrapper): GPUs, their memory and processes.
//!
//! NVML is initialised once and kept; each device's handle is looked up once and kept
//! (`handles.rs`), and looked up again after a reading of it fails. Each process list is one
//! driver call (`processes.rs`); what changes slowly is read on its own period
//! (`source::period`: per-process utilisation, MIG mode while off, memory health). A GPU that stops answering is
//! listed as `Lost` with what was known of it, and the others keep updating.

pub(crate) mod convert;
pub mod events;
mod handles;
pub mod health;
pub mod mig;
mod processes;
mod utilization;

use std::sync::Arc;

use nvml_wrapper::enum_wrappers::device::TemperatureSensor;
use nvml_wrapper::error::{NvmlError, nvml_sym, nvml_try};
use nvml_wrapper::{Device, Nvml};

use self::convert::{
    Identity, NO_GPU, cuda_version, field, lost_gpu, memory_reading, memory_v1, memory_v2,
    merge_processes, process_list, reason, startup_message,
};
use self::handles::Handles;
use self::utilization::Slow;
use super::period::{self, Period};
use crate::clock::tick_times::time;

use super::{GpuReader, GpuReadout, GpuSample, GpuStatus, MachineInfo, Memory, SourceError};

/// The variable that names another libnvidia-ml to load.
pub const LIB_ENV: &str = "GPUMON_NVML_LIB";

/// Reads GPUs through one NVML session.
pub struct NvmlReader {
    /// Shared with the thread that waits for the GPUs' events (`events::NvmlEvents`).
    nvml: Arc<Nvml>,
    /// Each GPU's (by index) device handle, once looked up.
    handles: Handles,
    /// What each GPU (by index) answered last, to keep listing it if it is lost.
    known: Vec<Option<Identity>>,
    /// Early R535 driver: process lists are read only while short (see `process_list`).
    stride_bug: bool,
    /// Processes seen last tick, to size this tick's list in one allocation.
    last_processes: usize,
    /// Entries of the buffer a GPU's process list is read into (`processes.rs`).
    list_cap: u32,
    /// Each GPU's (by index) per-process utilisation, read at its own slower rate.
    util: Vec<utilization::Slow>,
    /// Each GPU's MIG instances were last looked for when; a GPU with MIG off is asked again
    /// once per `period::MIG_MODE`, one with MIG on every tick.
    mig: Vec<(Period, bool)>,
    /// Each GPU's (by index) memory health, read once per `period::HEALTH`.
    health: Vec<health::Slow>,
}

impl NvmlReader {
    /// Starts NVML; the error says in one line why it could not (no driver, no GPU, ...).
    /// `GPUMON_NVML_LIB` names another libnvidia-ml to load (non-standard driver installs).
    pub fn new() -> Result<Self, SourceError> {
        let lib = std::env::var_os(LIB_ENV);
        let unavailable =
            |e: NvmlError| SourceError::Unavailable(startup_message(&e, lib.as_deref()));
        let nvml = open(lib.as_deref()).map_err(unavailable)?;
        match nvml.device_count().map_err(unavailable)? {
            0 => Err(SourceError::Unavailable(NO_GPU.to_string())),
            n => Ok(NvmlReader {
                stride_bug: has_stride_bug(&nvml),
                nvml,
                handles: Handles::default(),
                known: vec![None; n as usize],
                last_processes: 0,
                list_cap: processes::MIN_CAP,
                util: Vec::new(),
                mig: Vec::new(),
                health: Vec::new(),
            }),
        }
    }

    /// The session, for the thread that waits for the GPUs' events.
    pub fn session(&self) -> Arc<Nvml> {
        Arc::clone(&self.nvml)
    }

    fn device_count(&self) -> Result<u32, SourceError> {
        self.nvml.device_count().map_err(|e| {
            SourceError::Unavailable(format!("NVML stopped answering: {}", reason(&e)))
        })
    }
}

impl GpuReader for NvmlReader {
    fn versions(&mut self) -> Result<MachineInfo, SourceError> {
        self.device_count()?;
        Ok(MachineInfo {
            host: String::new(),
            kernel: None,
            driver_version: self.nvml.sys_driver_version().ok(),
            nvml_version: self.nvml.sys_nvml_version().ok(),
            cuda_version: self
                .nvml
                .sys_cuda_driver_version()
                .ok()
                .and_then(cuda_version),
            no_gpu: None,
        })
    }

    fn read(&mut self) -> Result<GpuReadout, SourceError> {
        let count = time("nvml.device_count", || self.device_count())?;
        let n = count as usize;
        if self.known.len() < n {
            self.known.resize(n, None);
        }
        self.util
            .resize_with(n.max(self.util.len()), || Slow::new(period::PROCESS_UTIL));
        self.mig.resize_with(n.max(self.mig.len()), || {
            (Period::new(period::MIG_MODE), false)
        });
        self.health
            .resize_with(n.max(self.health.len()), health::Slow::default);
        let now_ms = crate::clock::unix_ms();
        let mut out = GpuReadout {
            gpus: Vec::with_capacity(count as usize),
            processes: Vec::with_capacity(self.last_processes),
        };
        let gpus = (self.known.iter_mut().zip(&mut self.util))
            .zip(self.mig.iter_mut().zip(&mut self.health));
        for (index, ((known, util), (mig, health))) in (0..count).zip(gpus) {
            let dev = match time("nvml.device_by_index", || {
                self.handles.device(&self.nvml, index)
            }) {
                Ok(dev) => dev,
                Err(e) => {
                    out.gpus.push(lost_gpu(index, known.as_ref(), reason(&e)));
                    continue;
                }
            };
            let slow = SlowParts {
                util,
                mig,
                health,
                now_ms,
            };
            let lists = Lists {
                stride_bug: self.stride_bug,
                cap: &mut self.list_cap,
            };
            if !read_gpu(&dev, index, known, slow, lists, &mut out) {
                self.handles.forget(index);
            }
        }
        self.last_processes = out.processes.len();
        Ok(out)
    }
}

/// What of one GPU is read at its own slower rate, and the time of this tick.
struct SlowParts<'a> {
    util: &'a mut Slow,
    mig: &'a mut (Period, bool),
    health: &'a mut health::Slow,
    now_ms: u64,
}

/// How process lists are read: through nvml-wrapper where the driver has the R535 stride bug
/// (its guard needs the count first), else in one call each into a buffer of `cap` entries.
struct Lists<'a> {
    stride_bug: bool,
    cap: &'a mut u32,
}

/// Appends GPU `index` (its device `dev`) and its processes to `out`; a failing GPU is appended
/// as `Lost`, and false returned (its handle is then looked up again). `known` is what it
/// answered before.
fn read_gpu(
    dev: &Device<'_>,
    index: u32,
    known: &mut Option<Identity>,
    slow: SlowParts<'_>,
    lists: Lists<'_>,
    out: &mut GpuReadout,
) -> bool {
    let Lists { stride_bug, cap } = lists;
    let id: &Identity = match known {
        Some(id) => id,
        None => match identity(dev) {
            Ok(id) => known.insert(id),
            Err(e) => {
                out.gpus.push(lost_gpu(index, None, reason(&e)));
                return false;
            }
        },
    };
    let memory = match time("nvml.memory_info", || dev.memory_info()) {
        Ok(m) => Ok(memory_v2(&m)),
        Err(NvmlError::FailedToLoadSymbol(_)) => memory_info_v1(dev),
        Err(e) => Err(e),
    };
    let memory = match memory_reading(memory) {
        Ok(m) => m,
        Err(why) => {
            out.gpus.push(lost_gpu(index, Some(id), why));
            return false;
        }
    };
    let compute = time("nvml.compute_processes", || {
        process_list(
            stride_bug,
            || dev.running_compute_processes_count(),
            || match stride_bug {
                true => dev.running_compute_processes(),
                false => processes::compute(dev, cap),
            },
            || dev.running_compute_processes_v2(),
        )
    });
    let graphics = time("nvml.graphics_processes", || {
        process_list(
            stride_bug,
            || dev.running_graphics_processes_count(),
            || match stride_bug {
                true => dev.running_graphics_processes(),
                false => processes::graphics(dev, cap),
            },
            || dev.running_graphics_processes_v2(),
        )
    });
    let total = memory.value().map(|m| m.total);
    let first = out.processes.len();
    merge_processes(&id.uuid, total, &compute, &graphics, &mut out.processes);
    slow.util
        .fill(slow.now_ms, &mut out.processes[first..], |seen| {
            time("nvml.process_utilization", || {
                dev.process_utilization_stats(seen)
            })
        });
    let (mig_period, mig_on) = slow.mig;
    let mig = if *mig_on || mig_period.due(slow.now_ms) {
        let instances = time("nvml.mig", || mig::read(dev));
        *mig_on = !instances.is_empty();
        instances
    } else {
        Vec::new()
    };
    out.gpus.push(GpuSample {
        uuid: id.uuid.clone(),
        index,
        name: id.name.clone(),
        pci_bus_id: id.pci_bus_id.clone(),
        status: GpuStatus::Ok,
        memory,
        utilization: field(time("nvml.utilization_rates", || {
            dev.utilization_rates().map(|u| u.gpu)
        })),
        temperature_c: field(time("nvml.temperature", || {
            dev.temperature(TemperatureSensor::Gpu)
        })),
        power_mw: field(time("nvml.power_usage", || dev.power_usage())),
        mig,
        health: Some(slow.health.get(slow.now_ms, dev)),
    });
    true
}

/// An NVML session from the library `lib` names, or the driver's. Put on the heap here: the
/// session holds every NVML symbol's lookup, about 36 KB, and each frame it passed through by
/// value kept a copy: the thread that started it kept 164 KB of its stack resident for good
/// (76 KB now, what nvml-wrapper's own start takes).
#[inline(never)]
fn open(lib: Option<&std::ffi::OsStr>) -> Result<Arc<Nvml>, NvmlError> {
    match lib {
        Some(path) => Nvml::builder().lib_path(path).init(),
        None => Nvml::init(),
    }
    .map(Arc::new)
}

/// Whether this driver has the early-R535 process-list stride bug, detected as nvitop does:
/// `nvmlDeviceGetConfComputeMemSizeInfo` present and `nvmlDeviceGetRunningProcessDetailList` absent.
fn has_stride_bug(nvml: &Nvml) -> bool {
    let lib = nvml.lib();
    lib.nvmlDeviceGetConfComputeMemSizeInfo.is_ok()
        && lib.nvmlDeviceGetRunningProcessDetailList.is_err()
}

/// The facts about a GPU that do not change while NVML runs.
fn identity(dev: &Device<'_>) -> Result<Identity, NvmlError> {
    Ok(Identity {
        uuid: dev.uuid()?,
        name: dev.name()?,
        pci_bus_id: field(dev.pci_info().map(|p| p.bus_id)),
    })
}

/// `nvmlMemory_t` (v1): three `unsigned long long`, in this order.
#[repr(C)]
#[derive(Default)]
struct MemoryV1 {
    total: u64,
    free: u64,
    used: u64,
}

/// Memory info through the v1 symbol, for drivers before R510 that lack `..._v2`
/// (nvml-wrapper only calls v2).
#[allow(unsafe_code)]
fn memory_info_v1(dev: &Device<'_>) -> Result<Memory, NvmlError> {
    let sym = nvml_sym(dev.nvml().lib().nvmlDeviceGetMemoryInfo.as_ref())?;
    let mut mem = MemoryV1::default();
    // SAFETY: `sym` is `nvmlDeviceGetMemoryInfo` from the loaded library, called with the valid
    // handle of a device of the same, still initialised, NVML session and a pointer to a live,
    // writable struct laid out exactly like `nvmlMemory_t` (#[repr(C)], three u64).
    let code = unsafe { sym(dev.handle(), (&raw mut mem).cast()) };
    nvml_try(code)?;
    Ok(memory_v1(mem.total, mem.free, mem.used))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a driver (CI, this development machine) start-up fails with one plain line;
    /// on a GPU machine it starts and lists every GPU.
    #[test]
    fn starts_or_says_why_in_one_line() {
        match NvmlReader::new() {
            Ok(mut reader) => {
                let readout = reader.read().unwrap();
                assert_eq!(readout.gpus.len(), reader.known.len());
                assert!(reader.versions().unwrap().driver_version.is_some());
            }
            Err(SourceError::Unavailable(why)) => {
                assert!(!why.is_empty() && !why.contains('\n'), "{why}");
            }
            Err(other) => panic!("unexpected error: {other}"),
        }
    }
}
