//! Per-process utilisation from NVML's process utilisation samples, as a pure conversion tested
//! without a GPU, read at its own slower rate (`Slow`).
//!
//! `nvmlDeviceGetProcessUtilization` returns the samples taken since a timestamp, one per process
//! and sample period, only for processes whose utilisation was not zero in it. So a process the
//! call leaves out was idle (0%), while a failed call makes every process's figures n/a.

use std::collections::HashMap;

use nvml_wrapper::error::NvmlError;
use nvml_wrapper::struct_wrappers::device::ProcessUtilizationSample;

use super::convert::reason;
use crate::source::period::Period;
use crate::source::{GpuProcess, ProcessUtil, Reading};

/// Why utilisation is n/a when NVML has no sample since the last read.
pub const NO_SAMPLE: &str = "no utilisation sample from NVML since the last read";

/// Sets each process's utilisation from one call's result and returns the newest sample's
/// timestamp (µs), the `last_seen_timestamp` of the next call; `last` when there is none.
pub fn apply(
    result: Result<Vec<ProcessUtilizationSample>, NvmlError>,
    processes: &mut [GpuProcess],
    last: Option<u64>,
) -> Option<u64> {
    let samples = match result {
        Ok(samples) => samples,
        Err(e) => {
            let why = match e {
                NvmlError::NotFound => NO_SAMPLE.to_string(),
                NvmlError::NotSupported => {
                    "not supported by this GPU or driver (NVML process utilisation)".to_string()
                }
                other => reason(&other),
            };
            for p in processes {
                p.util = Reading::na(why.clone());
            }
            return last;
        }
    };
    // The newest sample of each process.
    let mut newest: HashMap<u32, &ProcessUtilizationSample> = HashMap::new();
    for s in &samples {
        let e = newest.entry(s.pid).or_insert(s);
        if s.timestamp > e.timestamp {
            *e = s;
        }
    }
    for p in processes {
        p.util =
            Reading::Value(
                newest
                    .get(&p.pid)
                    .map_or_else(ProcessUtil::default, |s| ProcessUtil {
                        sm: s.sm_util.min(100),
                        memory: s.mem_util.min(100),
                        encoder: s.enc_util.min(100),
                        decoder: s.dec_util.min(100),
                    }),
            );
    }
    samples.iter().map(|s| s.timestamp).max().or(last)
}

/// Why a process first listed between two reads has no utilisation yet.
pub const NOT_YET: &str = "not read yet (per-process utilisation is read every 5 s)";

/// Per-process utilisation of one GPU at its own slower rate (`period::PROCESS_UTIL`): NVML is
/// asked when the period is due, and the figures of that read are carried to the ticks between.
pub struct Slow {
    period: Period,
    /// The newest sample's timestamp, the next call's `last_seen_timestamp`.
    seen: Option<u64>,
    last: HashMap<u32, Reading<ProcessUtil>>,
}

impl Slow {
    pub fn new(every: std::time::Duration) -> Self {
        Slow {
            period: Period::new(every),
            seen: None,
            last: HashMap::new(),
        }
    }

    /// Sets each process's utilisation at `now_ms`: from `read` (NVML's call, given the last
    /// timestamp seen) when due, else from the last read. A GPU with no process is not asked
    /// (the call, about 2 ms of an H100's driver, would fill nothing), and is asked at once
    /// when one comes.
    pub fn fill(
        &mut self,
        now_ms: u64,
        processes: &mut [GpuProcess],
        read: impl FnOnce(Option<u64>) -> Result<Vec<ProcessUtilizationSample>, NvmlError>,
    ) {
        if processes.is_empty() {
            return;
        }
        if self.period.due(now_ms) {
            self.seen = apply(read(self.seen), processes, self.seen);
            self.last = processes.iter().map(|p| (p.pid, p.util.clone())).collect();
        } else {
            for p in processes {
                p.util = self
                    .last
                    .get(&p.pid)
                    .cloned()
                    .unwrap_or_else(|| Reading::na(NOT_YET));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::ProcessKind;

    fn process(pid: u32) -> GpuProcess {
        GpuProcess {
            pid,
            gpu_uuid: "GPU-a".into(),
            kind: ProcessKind::Compute,
            device_memory: Reading::Value(1),
            util: Reading::na("not read"),
            gpu_instance_id: None,
            compute_instance_id: None,
        }
    }

    fn sample(pid: u32, timestamp: u64, sm: u32, mem: u32) -> ProcessUtilizationSample {
        ProcessUtilizationSample {
            pid,
            timestamp,
            sm_util: sm,
            mem_util: mem,
            enc_util: 0,
            dec_util: 7,
        }
    }

    #[test]
    fn the_newest_sample_counts_and_a_missing_process_was_idle() {
        let mut procs = [process(10), process(20)];
        let samples = vec![
            sample(10, 5, 30, 4),
            sample(10, 9, 48, 12),
            sample(99, 7, 1, 1),
        ];
        assert_eq!(apply(Ok(samples), &mut procs, Some(3)), Some(9));
        assert_eq!(
            procs[0].util,
            Reading::Value(ProcessUtil {
                sm: 48,
                memory: 12,
                encoder: 0,
                decoder: 7
            })
        );
        assert_eq!(procs[1].util, Reading::Value(ProcessUtil::default()));
    }

    #[test]
    fn unsupported_and_no_sample_are_na_with_the_reason_and_keep_the_timestamp() {
        let mut procs = [process(10)];
        assert_eq!(
            apply(Err(NvmlError::NotFound), &mut procs, Some(42)),
            Some(42)
        );
        assert_eq!(procs[0].util, Reading::na(NO_SAMPLE));
        assert_eq!(apply(Err(NvmlError::NotSupported), &mut procs, None), None);
        assert!(procs[0].util.reason().unwrap().contains("not supported"));
        apply(Ok(Vec::new()), &mut procs, None);
        assert_eq!(procs[0].util, Reading::Value(ProcessUtil::default()));
    }

    #[test]
    fn readings_above_100_percent_are_capped() {
        let mut procs = [process(10)];
        apply(Ok(vec![sample(10, 1, 250, 100)]), &mut procs, None);
        assert_eq!(procs[0].util.get().unwrap().sm, 100);
    }

    #[test]
    fn a_slow_read_is_carried_between_reads_and_a_change_shows_within_its_period() {
        let mut slow = Slow::new(std::time::Duration::from_secs(5));
        let mut calls = 0;
        let mut tick = |slow: &mut Slow, now: u64, pids: &[u32], sm: u32| {
            let mut procs: Vec<GpuProcess> = pids.iter().map(|p| process(*p)).collect();
            slow.fill(now, &mut procs, |_| {
                calls += 1;
                Ok(vec![sample(10, now, sm, 1)])
            });
            procs
                .iter()
                .map(|p| p.util.get().map(|u| u.sm))
                .collect::<Vec<_>>()
        };
        assert_eq!(tick(&mut slow, 0, &[10], 40), [Some(40)]);
        // Between reads: the last figures, and n/a for a process listed since.
        assert_eq!(tick(&mut slow, 1_000, &[10, 20], 90), [Some(40), None]);
        assert_eq!(tick(&mut slow, 4_999, &[10, 20], 90), [Some(40), None]);
        // The change shows at the next read, within the period.
        assert_eq!(tick(&mut slow, 5_000, &[10, 20], 90), [Some(90), Some(0)]);
        // An idle GPU is not asked; the first process to come is read at once.
        let mut idle = Slow::new(std::time::Duration::from_secs(5));
        assert!(tick(&mut idle, 0, &[], 40).is_empty());
        assert_eq!(tick(&mut idle, 1_000, &[10], 60), [Some(60)]);
        assert_eq!(calls, 3);
    }
}
