//! A distributed job's recording replayed by `gpumon explain`, as the real runs will be: the DDP
//! job whose rank 0 alone grows under its cap is one `rank-grows-alone` alert for the job (and no
//! second `leak` for rank 0), and `torch.load` without `map_location` is one `rank-extra-context`
//! alert naming rank 1 on GPU0.

#[path = "common/replay.rs"]
mod replay;

use gpumon::recording::{Header, Writer};
use gpumon::sample::{Framework, Pool, ProcessSample, Reading, Sample};
use gpumon::source::scripted::build::{GIB, MIB, gpu, machine, process, ranked};
use replay::replay_alerts;
use serde_json::Value;

const T0: u64 = 1_795_835_520_000;
const JOB: &str = "torchrun:9f1c";

/// A PyTorch pool as the probe reads it, capped at 14 GiB.
fn pool(allocated: u64, at_ms: u64) -> Pool {
    Pool {
        framework: Framework::Pytorch,
        version: Some("2.11.0".into()),
        at_ms,
        allocated: Some(allocated),
        reserved: Some(allocated + 64 * MIB),
        cached_free: Some(64 * MIB),
        stranded: Some(32 * MIB),
        largest_free_block: None,
        largest_alloc: None,
        limit: Some(14 * GIB),
        peak_allocated: None,
        peak_reserved: None,
        alloc_retries: Some(0),
        ooms: Some(0),
    }
}

/// Writes `samples` (processes by second) as a recording and returns `explain --format json`'s
/// alerts of it.
fn explained(name: &str, secs: u64, at: impl Fn(u64) -> Vec<ProcessSample>) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    let file = std::fs::File::create(&path).unwrap();
    let mut w = Writer::new(file, &Header::new(machine(), 1000)).unwrap();
    for k in 0..secs {
        let processes = at(k);
        let gpus = (0..2)
            .map(|i| {
                let uuid = gpu(i, 0, 0, 0).uuid;
                let used = processes
                    .iter()
                    .filter(|p| p.gpu_uuid == uuid)
                    .filter_map(|p| p.device_memory.get())
                    .sum();
                gpu(i, 80 * GIB, used, 0)
            })
            .collect();
        let sample = Sample {
            at_ms: T0 + k * 1000,
            gpus,
            processes,
            ..Default::default()
        };
        w.sample(&sample).unwrap();
    }
    drop(w);
    replay_alerts(&path)
}

fn rank(pid: u32, gpu_index: u32, device: u64, rank: u32) -> ProcessSample {
    let g = gpu(gpu_index, 80 * GIB, 0, 0);
    ranked(
        process(pid, &g, device, Framework::Pytorch, "python3 train.py"),
        JOB,
        rank,
        2,
    )
}

#[test]
fn rank_0_alone_growing_is_one_alert_for_the_job() {
    let alerts = explained("ddp.ndjson", 45, |k| {
        let at = T0 + k * 1000;
        // Rank 0 keeps part of each step's logits from second 10: 130 MiB a second.
        let grown = 7 * GIB + k.saturating_sub(10) * 130 * MIB;
        let mut r0 = rank(1446, 0, grown + 2 * GIB, 0);
        r0.pool = Reading::Value(pool(grown, at));
        let mut r1 = rank(1447, 1, 9 * GIB, 1);
        r1.pool = Reading::Value(pool(7 * GIB, at));
        vec![r0, r1]
    });
    let of =
        |class: &str| -> Vec<&Value> { alerts.iter().filter(|a| a["class"] == class).collect() };
    let grows = of("rank-grows-alone");
    assert_eq!(grows.len(), 1, "{alerts:#?}");
    assert_eq!(grows[0]["pid"], 1446);
    assert_eq!(grows[0]["gpu"], 0);
    let title = grows[0]["title"].as_str().unwrap();
    assert!(
        title.starts_with(
            "rank 0 (pid 1446) grows +130M/s while rank 1 is flat: work only rank 0 does"
        ),
        "{title}"
    );
    assert!(title.contains("reaches its 14.00 GiB cap"), "{title}");
    assert!(
        of("leak").is_empty(),
        "one alert for one climb: {alerts:#?}"
    );
}

#[test]
fn torch_load_without_map_location_is_one_alert_naming_rank_1_on_gpu0() {
    let alerts = explained("load.ndjson", 30, |_| {
        let mut on_gpu0 = rank(1447, 0, 774 * MIB, 1);
        on_gpu0.start_time = rank(1447, 1, 0, 1).start_time;
        vec![
            rank(1446, 0, 1924 * MIB, 0),
            rank(1447, 1, 1924 * MIB, 1),
            on_gpu0,
        ]
    });
    let found: Vec<&Value> = alerts
        .iter()
        .filter(|a| a["class"] == "rank-extra-context")
        .collect();
    assert_eq!(found.len(), 1, "{alerts:#?}");
    assert_eq!(found[0]["pid"], Value::Null);
    assert_eq!(found[0]["gpu"], 0);
    let title = found[0]["title"].as_str().unwrap();
    assert!(
        title.starts_with("rank 1 (pid 1447) also holds 774.00 MiB on GPU0, rank 0's GPU"),
        "{title}"
    );
}
