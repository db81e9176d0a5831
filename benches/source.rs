//! Source-side conversions: joining the driver's process list with /proc's facts (the live
//! source without its readers), a sample's JSON encode/decode (recordings, replay, demo), and
//! the /proc reader on real processes with and without its cache of what rarely changes; and
//! a scan of 8 ranks' probe files, unchanged (checked, not read) and each rewritten (read and
//! parsed, as when every probe has written since the last tick).
//!
//! `cargo bench --bench source -- --warm-up-time 1 --measurement-time 3`

mod common;

use std::collections::HashMap;
use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use gpumon::logs::LogWatch;
use gpumon::source::live::LiveSource;
use gpumon::source::procfs::ProcReader;
use gpumon::source::{
    GpuProcess, GpuReader, GpuReadout, HostProcess, HostReader, MachineInfo, Sample, Source,
    SourceError,
};

use common::{SIZES, sample};

/// Hands out the same driver readout every tick.
struct FakeGpu(GpuReadout);

impl GpuReader for FakeGpu {
    fn versions(&mut self) -> Result<MachineInfo, SourceError> {
        Ok(gpumon::source::scripted::build::machine())
    }
    fn read(&mut self) -> Result<GpuReadout, SourceError> {
        Ok(self.0.clone())
    }
}

/// Knows every PID of the readout.
struct FakeHost(HashMap<u32, HostProcess>);

impl HostReader for FakeHost {
    fn host(&mut self) -> (String, Option<String>) {
        ("gpu-07".into(), None)
    }
    fn lookup(&mut self, pids: &[u32]) -> HashMap<u32, HostProcess> {
        pids.iter()
            .filter_map(|p| Some((*p, self.0.get(p)?.clone())))
            .collect()
    }
}

fn live_parts(s: &Sample) -> (FakeGpu, FakeHost) {
    let readout = GpuReadout {
        gpus: s.gpus.clone(),
        processes: s
            .processes
            .iter()
            .map(|p| GpuProcess {
                pid: p.pid,
                gpu_uuid: p.gpu_uuid.clone(),
                kind: p.kind,
                device_memory: p.device_memory.clone(),
                util: p.util.clone(),
                gpu_instance_id: p.gpu_instance_id,
                compute_instance_id: p.compute_instance_id,
            })
            .collect(),
    };
    let host = s
        .processes
        .iter()
        .map(|p| {
            let h = HostProcess {
                start_time: p.start_time.clone(),
                user: p.user.clone(),
                command: p.command.clone(),
                vms: p.vms.clone(),
                rss: p.rss.clone(),
                framework: p.framework.clone(),
                settings: p.settings.clone(),
                container: p.container.clone(),
                rank: p.rank.clone(),
                ras: gpumon::source::ras::RasAddr::At(gpumon::source::ras::DEFAULT_ADDR),
            };
            (p.pid, h)
        })
        .collect();
    (FakeGpu(readout), FakeHost(host))
}

fn live(c: &mut Criterion) {
    let mut group = c.benchmark_group("live_sample");
    for (gpus, procs) in SIZES {
        let (g, h) = live_parts(&sample(gpus, procs, 0, false));
        let mut source = LiveSource::new(g, h, LogWatch::default());
        source.sample().unwrap();
        group.bench_function(
            BenchmarkId::from_parameter(format!("{gpus}x{procs}")),
            |b| {
                b.iter(|| black_box(source.sample().unwrap()));
            },
        );
    }
    group.finish();
}

fn json(c: &mut Criterion) {
    let mut enc = c.benchmark_group("json_encode");
    for (gpus, procs) in SIZES {
        let s = sample(gpus, procs, 0, false);
        enc.bench_function(
            BenchmarkId::from_parameter(format!("{gpus}x{procs}")),
            |b| {
                b.iter(|| black_box(serde_json::to_vec(black_box(&s)).unwrap()));
            },
        );
    }
    enc.finish();
    let mut dec = c.benchmark_group("json_decode");
    for (gpus, procs) in SIZES {
        let line = serde_json::to_vec(&sample(gpus, procs, 0, false)).unwrap();
        dec.bench_function(
            BenchmarkId::from_parameter(format!("{gpus}x{procs}")),
            |b| {
                b.iter(|| black_box(serde_json::from_slice::<Sample>(black_box(&line)).unwrap()));
            },
        );
    }
    dec.finish();
}

/// `ProcReader::lookup` of ten real processes (this one and nine children) as a tick does it:
/// with the facts that rarely change cached for `period::LIFETIME`, and read afresh every tick.
/// This process holds 64 parked threads meanwhile, as a training job holds dozens: a reader that
/// lists each process's threads pays for them.
fn proc_lookup(c: &mut Criterion) {
    let (stop, parked) = std::sync::mpsc::channel::<()>();
    let parked = std::sync::Arc::new(std::sync::Mutex::new(parked));
    let threads: Vec<_> = (0..64)
        .map(|_| {
            let parked = std::sync::Arc::clone(&parked);
            std::thread::spawn(move || {
                let _ = parked.lock().map(|rx| rx.recv());
            })
        })
        .collect();
    let mut children: Vec<std::process::Child> = (0..9)
        .map(|_| {
            std::process::Command::new("sleep")
                .arg("60")
                .spawn()
                .unwrap()
        })
        .collect();
    let pids: Vec<u32> = std::iter::once(std::process::id())
        .chain(children.iter().map(std::process::Child::id))
        .collect();
    let mut group = c.benchmark_group("proc_lookup");
    for (name, refresh) in [
        ("cached", gpumon::source::period::LIFETIME),
        ("every_tick", std::time::Duration::ZERO),
    ] {
        let mut reader = ProcReader::with_refresh(refresh).unwrap();
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| black_box(reader.lookup(&pids)));
        });
    }
    group.finish();
    for child in &mut children {
        let _ = child.kill();
        let _ = child.wait();
    }
    drop(stop);
    for t in threads {
        let _ = t.join();
    }
}

/// A probe file of `pid` as the probe writes it (one PyTorch device).
fn probe_doc(pid: u32, at_ms: u64) -> String {
    format!(
        r#"{{"schema":"gpumon.probe/1","pid":{pid},"start_time":{start},"at_ms":{at_ms},"interval_ms":1000,
        "python":"3.12.3","stopped":null,"frameworks":[{{"name":"pytorch","version":"2.11.0","error":null,
        "devices":[{{"index":0,"uuid":"GPU-0000000{pid}","allocated":4328521728,"reserved":9621733376,
        "cached_free":5293211648,"stranded":5293211648,"largest_free_block":6291456,"largest_alloc":null,
        "limit":null,"peak_allocated":4328521728,"peak_reserved":9621733376,"alloc_retries":0,"ooms":0}}]}}]}}"#,
        start = 1_763_800_000 + u64::from(pid)
    )
}

fn probe_scan(c: &mut Criterion) {
    use gpumon::source::probe::PoolReader;
    use gpumon::source::probe::dir::ProbeDirs;
    let dir = tempfile::tempdir().unwrap();
    let proc_root = tempfile::tempdir().unwrap();
    let uid = rustix::process::getuid().as_raw();
    let pids: Vec<u32> = (1..=8).collect();
    for &pid in &pids {
        let p = proc_root.path().join(pid.to_string());
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(
            p.join("status"),
            format!("Name:\tpython\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n"),
        )
        .unwrap();
        std::fs::write(dir.path().join(format!("{pid}.json")), probe_doc(pid, 1)).unwrap();
    }
    let mut reader = ProbeDirs::new(vec![dir.path().to_path_buf()], false, uid)
        .with_proc_root(proc_root.path().to_path_buf());
    assert_eq!(reader.scan(0).reports.len(), 8);
    let mut group = c.benchmark_group("probe_scan_8");
    group.bench_function(BenchmarkId::from_parameter("unchanged"), |b| {
        b.iter(|| black_box(reader.scan(0)));
    });
    let mut mtime = std::time::SystemTime::now();
    let mut touch = || {
        mtime += std::time::Duration::from_secs(1);
        for &pid in &pids {
            let f = std::fs::File::options()
                .write(true)
                .open(dir.path().join(format!("{pid}.json")))
                .unwrap();
            f.set_modified(mtime).unwrap();
        }
    };
    // What "rewritten" spends changing the files' times, not scanning: subtract it.
    group.bench_function(BenchmarkId::from_parameter("touch only"), |b| {
        b.iter(&mut touch);
    });
    group.bench_function(BenchmarkId::from_parameter("rewritten"), |b| {
        b.iter(|| {
            touch();
            black_box(reader.scan(0))
        });
    });
    group.finish();
}

criterion_group!(benches, live, json, proc_lookup, probe_scan);
criterion_main!(benches);
