//! The GPU side of `gpumon run` when NVML cannot start: no GPUs and no processes, and the reason
//! (the GPU panel shows it), so the command still runs and its log is still followed.

use crate::source::{GpuReader, GpuReadout, MachineInfo, SourceError};

pub struct NoGpu {
    reason: String,
}

impl NoGpu {
    pub fn new(reason: String) -> NoGpu {
        NoGpu { reason }
    }
}

impl GpuReader for NoGpu {
    fn versions(&mut self) -> Result<MachineInfo, SourceError> {
        Ok(MachineInfo {
            host: String::new(),
            kernel: None,
            driver_version: None,
            nvml_version: None,
            cuda_version: None,
            no_gpu: Some(self.reason.clone()),
        })
    }

    fn read(&mut self) -> Result<GpuReadout, SourceError> {
        Ok(GpuReadout::default())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::io::Write;

    use super::*;
    use crate::logs::LogWatch;
    use crate::source::live::LiveSource;
    use crate::source::{HostProcess, HostReader, Source};

    struct NoHost;

    impl HostReader for NoHost {
        fn host(&mut self) -> (String, Option<String>) {
            ("box".into(), None)
        }
        fn lookup(&mut self, _: &[u32]) -> HashMap<u32, HostProcess> {
            HashMap::new()
        }
    }

    #[test]
    fn without_nvml_the_log_is_still_followed() {
        let mut log = tempfile::NamedTempFile::new().unwrap();
        let watch = LogWatch::new(&[log.path().to_path_buf()]);
        let reason = "NVML library not found (libnvidia-ml.so.1 missing)".to_string();
        let mut source = LiveSource::new(NoGpu::new(reason.clone()), NoHost, watch);
        let machine = source.machine().unwrap();
        assert_eq!(
            (machine.host.as_str(), machine.no_gpu),
            ("box", Some(reason))
        );
        writeln!(log, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.18 GiB of which 1.00 GiB is free.").unwrap();
        let s = source.sample().unwrap();
        assert!(s.gpus.is_empty() && s.processes.is_empty());
        assert_eq!(s.failures.len(), 1);
        assert_eq!(s.failures[0].line, 1);
    }

    /// Issue 40: a log its writer left behind is in the samples until it is read to its end, and
    /// its failure is timed when it was first seen on disk, not when it was read.
    #[test]
    fn a_log_left_behind_is_said_and_its_failure_timed_when_it_was_on_disk() {
        let mut log = tempfile::NamedTempFile::new().unwrap();
        let watch = LogWatch::new(&[log.path().to_path_buf()]);
        let mut source = LiveSource::new(NoGpu::new("no NVML".into()), NoHost, watch);
        source.machine().unwrap();
        let step = "step 100 loss 0.25 lr 3.0e-4 tokens/s 4096\n".repeat(1 << 14);
        for _ in 0..16 {
            log.write_all(step.as_bytes()).unwrap();
        }
        writeln!(log, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.18 GiB of which 1.00 GiB is free.").unwrap();
        let first = source.sample().unwrap();
        assert!(first.failures.is_empty());
        assert_eq!(first.logs.len(), 1, "{:?}", first.logs);
        assert_eq!(first.logs[0].since_ms, Some(first.at_ms));
        let mut found = Vec::new();
        for _ in 0..100 {
            let s = source.sample().unwrap();
            found.extend(s.failures);
            if s.logs.is_empty() {
                break;
            }
        }
        assert_eq!(found.len(), 1, "{found:?}");
        let f = &found[0];
        assert_eq!(f.at_ms, first.at_ms, "when it was first seen on disk");
        let t = f.timing.unwrap();
        assert_eq!(t.from, crate::oom::failure::TimeFrom::OnDisk);
        assert!(t.read_ms > first.at_ms);
    }
}
