//! `gpumon record` asks probes for maps under the same rules as the screen and `serve`
//! (`pipeline::alert_maps`): while a leak alert holds, a map at most every 30 s (the second 10 s after the first), through the
//! `Requests` it was given. A fake probe answers each request with a map in a later sample, so the
//! recording holds the leak's site, and the map the probe wrote at the OOM; replayed by `gpumon
//! explain`, it names the line that climbs and shows the map at the failure.

#[path = "common/replay.rs"]
mod replay;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gpumon::oom::parse_all;
use gpumon::record;
use gpumon::sample::pool_map::{MapOom, MapReason, ProbeAnswer};
use gpumon::sample::{Framework, Pool, PoolMap, ProbeNews, ProcessSample, Reading};
use gpumon::sampler::Factory;
use gpumon::source::probe::request::{Ask, Purpose, Requests, Verb, purpose_of};
use gpumon::source::replay::ReplaySource;
use gpumon::source::scripted::build::{GIB, MIB, gpu, machine, process};
use gpumon::source::scripted::maps::fragmented;
use gpumon::source::{MachineInfo, Sample, Source, SourceError};
use replay::replay_alerts;

const PID: u32 = 100;
const T0: u64 = 1_763_812_900_000;
/// Seconds until the OOM.
const OOM_AT: u64 = 75;

/// A probe that remembers what it was asked; its job answers a map request in its next sample.
#[derive(Default)]
struct FakeProbe {
    asked: Mutex<Vec<Ask>>,
    pending: Mutex<VecDeque<Ask>>,
}

impl Requests for FakeProbe {
    fn send(&self, ask: &Ask) -> Result<(), String> {
        self.asked.lock().unwrap().push(*ask);
        self.pending.lock().unwrap().push_back(*ask);
        Ok(())
    }
    fn answer(&self, _pid: u32) -> Result<Option<ProbeAnswer>, String> {
        Ok(None)
    }
    fn take_export(&self, pid: u32, _name: &str, _to: &Path) -> Result<PathBuf, String> {
        Err(format!("pid {pid} exports nothing here"))
    }
}

/// A PyTorch job leaking 100 MiB a second under a 12 GiB cap, every byte of it at one line
/// (proj/model.py:41 forward), until a 1 GiB request fails at `OOM_AT`.
struct LeakingJob {
    k: u64,
    probe: Arc<FakeProbe>,
}

fn start_time() -> u64 {
    1_763_800_000 + u64::from(PID)
}

/// The job's map at second `k`: the leaking line holds what leaked so far.
fn map_at(k: u64, uuid: &str) -> PoolMap {
    let mut map = fragmented(PID, uuid, T0 + k * 1000, 16);
    map.start_time = start_time();
    map.frameworks[0].devices[0].sites.as_mut().unwrap()[1].bytes += k * 100 * MIB;
    map
}

fn news(map: PoolMap) -> ProbeNews {
    ProbeNews {
        pid: PID,
        start_time: start_time(),
        answer: None,
        recording: None,
        map: Some(Box::new(map)),
        end: None,
        main_where: None,
    }
}

impl Source for LeakingJob {
    fn machine(&mut self) -> Result<MachineInfo, SourceError> {
        Ok(machine())
    }

    fn sample(&mut self) -> Result<Sample, SourceError> {
        let k = self.k;
        if k > OOM_AT {
            return Err(SourceError::Ended);
        }
        self.k += 1;
        let at_ms = T0 + k * 1000;
        let allocated = 4 * GIB + k * 100 * MIB;
        let g = gpu(0, 80 * GIB, allocated + GIB, GIB / 2);
        let pool = Pool {
            framework: Framework::Pytorch,
            version: None,
            at_ms,
            allocated: Some(allocated),
            reserved: Some(allocated + 64 * MIB),
            cached_free: Some(64 * MIB),
            stranded: Some(0),
            largest_free_block: None,
            largest_alloc: None,
            limit: Some(12 * GIB),
            peak_allocated: None,
            peak_reserved: None,
            alloc_retries: Some(0),
            ooms: Some(0),
        };
        let p = ProcessSample {
            pool: Reading::Value(pool),
            start_time: Reading::Value(start_time()),
            ..process(
                PID,
                &g,
                allocated + GIB,
                Framework::Pytorch,
                "python train.py",
            )
        };
        // A request written since the last sample is answered now, as a probe's next tick would.
        let mut probes: Vec<ProbeNews> = Vec::new();
        if let Some(ask) = self.probe.pending.lock().unwrap().pop_front() {
            let mut map = map_at(k, &g.uuid);
            map.reason = MapReason::Alert;
            map.request_id = Some(ask.id);
            probes.push(news(map));
        }
        let mut failures = Vec::new();
        if k == OOM_AT {
            let mut oom = map_at(k, &g.uuid);
            oom.reason = MapReason::Oom;
            oom.oom = Some(MapOom {
                device: 0,
                request: GIB,
                device_allocated: None,
                device_free: None,
            });
            probes = vec![news(oom)];
            let line = "CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 60.00 GiB is free. Including non-PyTorch memory, this process has 12.40 GiB memory in use. 12.00 GiB allowed; Of the allocated memory 11.30 GiB is allocated by PyTorch, and 64.00 MiB is reserved by PyTorch but unallocated.";
            failures = parse_all(line.as_bytes())
                .into_iter()
                .map(|f| f.into_failure(at_ms, "train.log", Some(PID)))
                .collect();
        }
        Ok(Sample {
            at_ms,
            gpus: vec![g],
            processes: vec![p],
            failures,
            probes,
            ..Default::default()
        })
    }
}

#[tokio::test(start_paused = true)]
async fn record_asks_a_leaking_jobs_probe_for_maps_and_keeps_them_in_the_recording() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leak.ndjson");
    let probe = Arc::new(FakeProbe::default());
    let job = Arc::clone(&probe);
    let factory: Factory = Arc::new(move || {
        Ok(Box::new(LeakingJob {
            k: 0,
            probe: Arc::clone(&job),
        }) as Box<dyn Source>)
    });
    let requests: Arc<dyn Requests> = probe.clone();
    let done = record::record(
        factory,
        &path,
        Duration::from_secs(1),
        None,
        Some(requests),
        std::future::pending::<i32>(),
    )
    .await
    .unwrap();
    assert_eq!(done.samples, OOM_AT + 1);

    // Asked as the screen and serve ask: this process, a map, for an alert, 30 s apart at least.
    let asked = probe.asked.lock().unwrap().clone();
    assert!(asked.len() >= 2, "{asked:?}");
    for ask in &asked {
        assert_eq!(
            (ask.pid, ask.start_time, ask.verb, purpose_of(ask.id)),
            (PID, Some(start_time()), Verb::Map, Purpose::Alert)
        );
    }
    // The second map 10 s after the first (the climbing line is named from two), then every 30 s.
    let times: Vec<u64> = asked.iter().map(|a| a.id / 10).collect();
    assert!(times.len() >= 2, "{times:?}");
    assert_eq!(times[1] - times[0], 10_000, "{times:?}");
    assert!(
        times[1..].windows(2).all(|w| w[1] - w[0] >= 30_000),
        "{times:?}"
    );

    // The recording holds the maps it asked for and the map at the OOM.
    let mut replay =
        ReplaySource::read("leak", gpumon::infile::Input::open(&path).unwrap().reader()).unwrap();
    let reasons: Vec<MapReason> = replay
        .samples()
        .map(Result::unwrap)
        .flat_map(|s| s.probes)
        .filter_map(|n| n.map.map(|m| m.reason))
        .collect();
    assert_eq!(
        reasons.iter().filter(|r| **r == MapReason::Alert).count(),
        asked.len()
    );
    assert_eq!(reasons.last(), Some(&MapReason::Oom));

    // Replayed, it names the line that climbs, and the failure shows the map at it.
    let alerts = replay_alerts(&path);
    let site = alerts
        .iter()
        .find(|a| a["class"] == "leak-site")
        .unwrap_or_else(|| panic!("no leak-site in {alerts:#?}"));
    assert!(
        site["title"]
            .as_str()
            .unwrap()
            .contains("proj/model.py:41 forward climbs between its maps"),
        "{site:#?}"
    );
    let failure = alerts
        .iter()
        .find(|a| a["level"] == "failure")
        .unwrap_or_else(|| panic!("no failure in {alerts:#?}"));
    assert!(
        failure["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e.as_str().unwrap().starts_with("at the failure:")),
        "{failure:#?}"
    );
}
