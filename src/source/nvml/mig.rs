//! MIG (Multi-Instance GPU): the instances of a GPU with MIG on, read through NVML, and their
//! conversion to `MigInstance`s as pure functions tested without a GPU (the lent GPU machines run
//! with MIG off, so these tests and the scripted source are what checks this path).
//!
//! nvml-wrapper 0.13 has `mig_mode()` and `mig_device_by_index()`; the MIG device count and a MIG
//! device's GPU/compute instance ids come from the library's own symbols
//! (`nvmlDeviceGetMaxMigDeviceCount`, `nvmlDeviceGetGpuInstanceId`,
//! `nvmlDeviceGetComputeInstanceId`), called like `memory_info_v1` in `nvml.rs`.

use nvml_wrapper::Device;
use nvml_wrapper::error::{NvmlError, nvml_sym, nvml_try};
use nvml_wrapper::struct_wrappers::device::MemoryInfo;
use nvml_wrapper::structs::device::MigMode;

use super::convert::reason;
use crate::source::{MigInstance, MigMemory, Reading};

/// `NVML_DEVICE_MIG_ENABLE`: MIG mode is on.
const MIG_ENABLE: u32 = 1;

/// What NVML answered about one MIG device.
#[derive(Debug)]
pub struct MigSlot {
    pub uuid: Result<String, NvmlError>,
    pub name: Result<String, NvmlError>,
    pub gpu_instance_id: Result<u32, NvmlError>,
    pub compute_instance_id: Result<u32, NvmlError>,
    pub memory: Result<MemoryInfo, NvmlError>,
}

/// Whether MIG is on now (a GPU without MIG answers `NotSupported`: off).
pub fn enabled(mode: &Result<MigMode, NvmlError>) -> bool {
    mode.as_ref().is_ok_and(|m| m.current == MIG_ENABLE)
}

/// The instance of a slot; `None` when the slot cannot be identified (no UUID or ids).
pub fn instance(slot: MigSlot) -> Option<MigInstance> {
    let name = slot.name.unwrap_or_default();
    let profile = name
        .rsplit_once("MIG ")
        .map_or(name.as_str(), |(_, p)| p)
        .trim()
        .to_string();
    Some(MigInstance {
        uuid: slot.uuid.ok()?,
        profile,
        gpu_instance_id: slot.gpu_instance_id.ok()?,
        compute_instance_id: slot.compute_instance_id.ok()?,
        memory: match slot.memory {
            Ok(m) => Reading::Value(MigMemory {
                total: m.total,
                used: m.used,
            }),
            Err(e) => Reading::na(reason(&e)),
        },
    })
}

/// Reads an unsigned int of a device through one of the library's symbols.
macro_rules! device_uint {
    ($dev:expr, $sym:ident) => {{
        let sym = nvml_sym($dev.nvml().lib().$sym.as_ref())?;
        let mut value = 0;
        // SAFETY: `sym` comes from the loaded library and takes a device handle and a pointer
        // to one unsigned int; the handle is a live device of the same, still initialised, NVML
        // session and the pointer is to a local the call may write.
        nvml_try(unsafe { sym($dev.handle(), &raw mut value) })?;
        Ok::<u32, NvmlError>(value)
    }};
}

/// The MIG instances of `dev`; empty when MIG is off or cannot be read.
pub fn read(dev: &Device<'_>) -> Vec<MigInstance> {
    if !enabled(&dev.mig_mode()) {
        return Vec::new();
    }
    let Ok(count) = max_count(dev) else {
        return Vec::new();
    };
    (0..count)
        .filter_map(|i| dev.mig_device_by_index(i).ok())
        .filter_map(|m| {
            instance(MigSlot {
                uuid: m.uuid(),
                name: m.name(),
                gpu_instance_id: ids(&m).0,
                compute_instance_id: ids(&m).1,
                memory: m.memory_info(),
            })
        })
        .collect()
}

#[allow(unsafe_code)]
fn max_count(dev: &Device<'_>) -> Result<u32, NvmlError> {
    device_uint!(dev, nvmlDeviceGetMaxMigDeviceCount)
}

/// A MIG device's GPU and compute instance ids.
#[allow(unsafe_code)]
fn ids(mig: &Device<'_>) -> (Result<u32, NvmlError>, Result<u32, NvmlError>) {
    let gpu = (|| device_uint!(mig, nvmlDeviceGetGpuInstanceId))();
    let compute = (|| device_uint!(mig, nvmlDeviceGetComputeInstanceId))();
    (gpu, compute)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `nvmlDeviceGetMemoryInfo_v2` gives for a MIG device (values of an H100 1g.10gb).
    fn memory(total: u64, used: u64) -> MemoryInfo {
        MemoryInfo {
            free: total - used,
            reserved: 0,
            total,
            used,
            version: 0x0200_0028,
        }
    }

    #[test]
    fn mig_is_on_only_when_its_current_mode_is_enabled() {
        assert!(enabled(&Ok(MigMode {
            current: 1,
            pending: 1
        })));
        assert!(!enabled(&Ok(MigMode {
            current: 0,
            pending: 1
        })));
        assert!(!enabled(&Err(NvmlError::NotSupported)));
    }

    #[test]
    fn a_slot_becomes_an_instance_with_its_profile() {
        let slot = MigSlot {
            uuid: Ok("MIG-5c2a3b1e-0000-5000-8000-000000000001".into()),
            name: Ok("NVIDIA H100 80GB HBM3 MIG 1g.10gb".into()),
            gpu_instance_id: Ok(9),
            compute_instance_id: Ok(0),
            memory: Ok(memory(10_880 << 20, 3 << 30)),
        };
        let m = instance(slot).unwrap();
        assert_eq!(m.profile, "1g.10gb");
        assert_eq!((m.gpu_instance_id, m.compute_instance_id), (9, 0));
        assert_eq!(m.memory.get().unwrap().used, 3 << 30);
    }

    #[test]
    fn unreadable_memory_is_na_and_an_unidentified_slot_is_skipped() {
        let slot = |gi: Result<u32, NvmlError>| MigSlot {
            uuid: Ok("MIG-x".into()),
            name: Err(NvmlError::Unknown),
            gpu_instance_id: gi,
            compute_instance_id: Ok(0),
            memory: Err(NvmlError::NoPermission),
        };
        let m = instance(slot(Ok(1))).unwrap();
        assert_eq!(m.memory, Reading::na("no permission"));
        assert_eq!(m.profile, "");
        assert!(instance(slot(Err(NvmlError::NotFound))).is_none());
    }
}
