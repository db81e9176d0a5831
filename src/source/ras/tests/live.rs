//! The live source asks RAS only while one of its processes is a rank that may run NCCL, at
//! the address that rank's environment gives, and the sample after the answer carries it.

use std::collections::HashMap;

use super::fake;
use crate::logs::LogWatch;
use crate::sample::{Framework, Inside};
use crate::source::live::LiveSource;
use crate::source::ras::{RasAddr, RasWatch};
use crate::source::scripted::build::{GIB, gpu, machine, process, ranked};
use crate::source::{
    GpuProcess, GpuReader, GpuReadout, HostProcess, HostReader, MachineInfo, Source, SourceError,
};

/// One GPU and its processes (pid, rank or none, the backend its probe saw).
struct Gpu(Vec<u32>);
impl GpuReader for Gpu {
    fn versions(&mut self) -> Result<MachineInfo, SourceError> {
        Ok(machine())
    }
    fn read(&mut self) -> Result<GpuReadout, SourceError> {
        let g = gpu(0, 80 * GIB, GIB, 0);
        let processes = self
            .0
            .iter()
            .map(|&pid| GpuProcess {
                pid,
                gpu_uuid: g.uuid.clone(),
                kind: crate::sample::ProcessKind::Compute,
                device_memory: crate::sample::Reading::Value(GIB),
                util: crate::sample::Reading::na("none"),
                gpu_instance_id: None,
                compute_instance_id: None,
            })
            .collect();
        Ok(GpuReadout {
            gpus: vec![g],
            processes,
        })
    }
}

/// /proc: pid 10 is no rank, 11 a rank whose RAS is moved, 12 a gloo rank with RAS on the
/// default address.
struct Host;
impl HostReader for Host {
    fn host(&mut self) -> (String, Option<String>) {
        ("gpu-07".into(), None)
    }
    fn lookup(&mut self, pids: &[u32]) -> HashMap<u32, HostProcess> {
        let g = gpu(0, 80 * GIB, GIB, 0);
        pids.iter()
            .map(|&pid| {
                let mut p = process(pid, &g, GIB, Framework::Pytorch, "python train.py");
                let mut ras = RasAddr::At(super::DEFAULT_ADDR);
                if pid == 11 {
                    p = ranked(p, "torchrun:r1", 0, 2);
                    ras = RasAddr::At("127.0.0.1:29999".parse().unwrap());
                }
                if pid == 12 {
                    p = ranked(p, "torchrun:r2", 1, 2);
                    if let Some(r) = p.rank.as_mut() {
                        r.inside = Some(Inside {
                            framework: Framework::Pytorch,
                            backend: Some("gloo".into()),
                            rank: Some(1),
                            world_size: Some(2),
                            master: None,
                            run_id: None,
                        });
                    }
                }
                let h = HostProcess::of_sample(p, ras);
                (pid, h)
            })
            .collect()
    }
}

#[test]
fn only_a_machine_with_an_nccl_rank_asks_and_the_next_sample_carries_the_answer() {
    let f = fake(false);
    let watch = || RasWatch::new(f.clone());
    let mut plain = LiveSource::new(Gpu(vec![10, 12]), Host, LogWatch::new(&[])).with_ras(watch());
    plain.machine().unwrap();
    assert!(plain.sample().unwrap().ras.is_none());
    assert!(
        f.addrs.lock().unwrap().is_empty(),
        "no rank, or a gloo one: not asked"
    );

    let mut job = LiveSource::new(Gpu(vec![10, 11]), Host, LogWatch::new(&[])).with_ras(watch());
    job.machine().unwrap();
    let first = job.sample().unwrap();
    assert!(
        first.ras.is_none(),
        "asked on a thread of its own: no tick waits"
    );
    let mut answer = None;
    for _ in 0..5_000 {
        answer = job.sample().unwrap().ras;
        if answer.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(answer.map(|r| r.at_ms), Some(29_999));
    assert_eq!(
        *f.addrs.lock().unwrap(),
        ["127.0.0.1:29999".parse().unwrap()]
    );
}
