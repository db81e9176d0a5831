//! A scripted source for tests: hands out the samples it was given, then ends.

use std::collections::VecDeque;

use super::{MachineInfo, Sample, Source, SourceError};

pub struct ScriptedSource {
    machine: MachineInfo,
    samples: VecDeque<Result<Sample, String>>,
}

impl ScriptedSource {
    /// Each entry is a sample, or the text of a failure the source reports at that tick.
    pub fn new(
        machine: MachineInfo,
        samples: impl IntoIterator<Item = Result<Sample, String>>,
    ) -> Self {
        ScriptedSource {
            machine,
            samples: samples.into_iter().collect(),
        }
    }
}

impl Source for ScriptedSource {
    fn machine(&mut self) -> Result<MachineInfo, SourceError> {
        Ok(self.machine.clone())
    }

    fn sample(&mut self) -> Result<Sample, SourceError> {
        match self.samples.pop_front() {
            Some(Ok(s)) => Ok(s),
            Some(Err(e)) => Err(SourceError::Unavailable(e)),
            None => Err(SourceError::Ended),
        }
    }
}

/// Builders for samples in tests and benchmarks.
pub mod build {
    use std::collections::BTreeMap;

    use crate::source::{
        Framework, GpuSample, GpuStatus, MachineInfo, Memory, ProcessKind, ProcessSample,
        ProcessUtil, Reading,
    };

    pub const MIB: u64 = 1 << 20;
    pub const GIB: u64 = 1 << 30;

    pub fn machine() -> MachineInfo {
        MachineInfo {
            host: "gpu-07".into(),
            kernel: Some("6.8.0".into()),
            driver_version: Some("580.159.04".into()),
            nvml_version: Some("13.580.159.04".into()),
            cuda_version: Some("13.0".into()),
            no_gpu: None,
        }
    }

    /// A GPU with NVML v2 memory figures; `free` is what is left of `total`.
    pub fn gpu(index: u32, total: u64, used: u64, reserved: u64) -> GpuSample {
        GpuSample {
            uuid: format!("GPU-{index:08x}-0000-0000-0000-000000000000"),
            index,
            name: "NVIDIA H200".into(),
            pci_bus_id: Reading::Value(format!("00000000:{:02X}:00.0", 0x19 + index)),
            status: GpuStatus::Ok,
            memory: Reading::Value(Memory {
                total,
                used,
                free: total - used - reserved,
                reserved: Reading::Value(reserved),
            }),
            utilization: Reading::Value(48),
            temperature_c: Reading::Value(54),
            power_mw: Reading::Value(367_000),
            mig: Vec::new(),
            health: None,
        }
    }

    /// A process with every host field present.
    pub fn process(
        pid: u32,
        gpu: &GpuSample,
        device: u64,
        framework: Framework,
        command: &str,
    ) -> ProcessSample {
        ProcessSample {
            pid,
            gpu_uuid: gpu.uuid.clone(),
            kind: ProcessKind::Compute,
            device_memory: Reading::Value(device),
            util: Reading::Value(ProcessUtil::default()),
            gpu_instance_id: None,
            compute_instance_id: None,
            start_time: Reading::Value(1_763_800_000 + u64::from(pid)),
            user: Reading::Value("ana".into()),
            command: Reading::Value(command.into()),
            vms: Reading::Value(device + 30 * GIB),
            rss: Reading::Value(600 * MIB),
            framework: Reading::Value(framework),
            settings: Reading::Value(BTreeMap::new()),
            log: Reading::Value(vec![format!("/srv/log/{pid}.out")]),
            pool: Reading::na(crate::source::probe::NOT_PROBED),
            container: Reading::Value(crate::sample::Placement {
                short: String::new(),
                full: String::new(),
                namespace_pid: None,
            }),
            rank: None,
        }
    }

    /// `gpu` with MIG on and the instances NVML gives for these MIG devices, converted as the
    /// NVML reader converts them (the lent GPU machines run with MIG off, so tests build MIG
    /// from NVML's own return shapes).
    /// `p` as rank `rank` of `world` in the torchrun job `job`, as its launcher's variables say.
    pub fn ranked(mut p: ProcessSample, job: &str, rank: u32, world: u32) -> ProcessSample {
        p.rank = Some(crate::sample::Rank {
            job: Some(job.into()),
            launcher: crate::sample::Launcher::Torchrun,
            rank: Some(rank),
            world_size: Some(world),
            local_rank: Some(rank),
            node: Some(0),
            problem: None,
            inside: None,
        });
        p
    }

    pub fn with_mig(
        mut gpu: GpuSample,
        slots: Vec<crate::source::nvml::mig::MigSlot>,
    ) -> GpuSample {
        gpu.mig = slots
            .into_iter()
            .filter_map(crate::source::nvml::mig::instance)
            .collect();
        gpu
    }

    /// A process as NVML's `ProcessInfo` lists it on `gpu` (device memory, MIG instance ids),
    /// converted as the NVML reader converts it, with every host field present.
    pub fn nvml_process(
        gpu: &GpuSample,
        info: nvml_wrapper::struct_wrappers::device::ProcessInfo,
        framework: Framework,
        command: &str,
    ) -> ProcessSample {
        let mut listed = Vec::new();
        let total = gpu.memory.value().map(|m| m.total);
        crate::source::nvml::convert::merge_processes(&gpu.uuid, total, &[info], &[], &mut listed);
        let mut p = process(listed[0].pid, gpu, 0, framework, command);
        p.device_memory = listed[0].device_memory.clone();
        p.gpu_instance_id = listed[0].gpu_instance_id;
        p.compute_instance_id = listed[0].compute_instance_id;
        p
    }
}

pub mod maps;
