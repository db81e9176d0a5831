//! The probe reader on good and bad files, and the join of its figures to NVML's processes.

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use super::dir::ProbeDirs;
use super::file::{MAX_BYTES, parse};
use super::*;
use crate::logs::LogWatch;
use crate::run::no_gpu::NoGpu;
use crate::sample::Framework;
use crate::source::live::LiveSource;
use crate::source::scripted::build::{GIB, gpu, process};
use crate::source::{
    GpuReader, GpuReadout, HostProcess, HostReader, MachineInfo, Source, SourceError,
};

const NOW: u64 = 1_763_800_100_000;

fn doc(pid: u32, uuid: &str) -> String {
    format!(
        r#"{{"schema":"gpumon.probe/1","pid":{pid},"start_time":{start},"at_ms":{NOW},"interval_ms":1000,
        "python":"3.12.3","stopped":null,"frameworks":[{{"name":"pytorch","version":"2.11.0","error":null,
        "devices":[{{"index":0,"uuid":"{uuid}","allocated":4328521728,"reserved":9621733376,
        "cached_free":5293211648,"stranded":5293211648,"largest_free_block":6291456,"largest_alloc":null,
        "limit":null,"peak_allocated":4328521728,"peak_reserved":9621733376,"alloc_retries":0,"ooms":0}}]}}]}}"#,
        start = 1_763_800_000 + u64::from(pid)
    )
}

#[test]
fn a_good_file_gives_the_frameworks_figures_exactly() {
    let r = parse(doc(873, "GPU-00000000").as_bytes(), 873).unwrap();
    assert_eq!((r.pid, r.start_time, r.at_ms), (873, 1_763_800_873, NOW));
    let d = &r.devices[0];
    assert_eq!(d.uuid.as_deref(), Some("GPU-00000000"));
    assert_eq!(d.pool.framework, Framework::Pytorch);
    assert_eq!(d.pool.allocated, Some(4_328_521_728));
    assert_eq!(d.pool.stranded, Some(5_293_211_648));
    assert_eq!(d.pool.largest_free_block, Some(6_291_456));
    assert_eq!(d.pool.largest_alloc, None);
}

#[test]
fn bad_files_are_refused_with_a_reason() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"".to_vec(), "malformed"),
        (b"{".to_vec(), "malformed"),
        (b"\xff\xfe\x00garbage".to_vec(), "malformed"),
        (b"[1,2,3]".to_vec(), "malformed"),
        (b"{\"pid\":873}".to_vec(), "no schema"),
        (
            doc(873, "GPU-0")
                .replace("gpumon.probe/1", "gpumon.probe/9")
                .into_bytes(),
            "schema \"gpumon.probe/9\"",
        ),
        (doc(874, "GPU-0").into_bytes(), "describes pid 874"),
        (
            doc(873, "GPU-0")
                .replace("\"pytorch\"", "\"caffe\"")
                .into_bytes(),
            "unknown framework",
        ),
        (
            doc(873, "GPU-0")
                .replace("4328521728,\"reserved\"", "-1,\"reserved\"")
                .into_bytes(),
            "malformed",
        ),
        (
            doc(873, "GPU-0")
                .replace("4328521728,\"reserved\"", "1.5,\"reserved\"")
                .into_bytes(),
            "malformed",
        ),
        (vec![b' '; (MAX_BYTES + 1) as usize], "oversized"),
    ];
    for (bytes, want) in cases {
        let err = parse(&bytes, 873).unwrap_err();
        assert!(err.contains(want), "{err:?} should say {want:?}");
    }
    // A UUID that is not NVML's form is treated as unknown, not trusted.
    let r = parse(doc(873, "../../etc/passwd").as_bytes(), 873).unwrap();
    assert_eq!(r.devices[0].uuid, None);
}

/// A /proc with `pid`'s status saying it runs as `uid` (the probe's other test modules use it too).
pub(super) fn proc_with(root: &Path, pid: u32, uid: u32) {
    let dir = root.join(pid.to_string());
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("status"),
        format!("Name:\tpython\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n"),
    )
    .unwrap();
}

pub(super) fn my_uid() -> u32 {
    rustix::process::getuid().as_raw()
}

#[test]
fn the_directory_reader_trusts_only_the_processes_own_regular_files() {
    let probe = tempfile::tempdir().unwrap();
    let proc_root = tempfile::tempdir().unwrap();
    let me = my_uid();
    // 100: good. 101: owned by us but its process runs as another user. 102: a symlink.
    // 103: oversized. 104: a directory. 105: its process has ended (ours: removed).
    for pid in [100, 102, 103, 104] {
        proc_with(proc_root.path(), pid, me);
    }
    proc_with(proc_root.path(), 101, me + 1);
    fs::write(probe.path().join("100.json"), doc(100, "GPU-00000000")).unwrap();
    fs::write(probe.path().join("101.json"), doc(101, "GPU-00000000")).unwrap();
    symlink(probe.path().join("100.json"), probe.path().join("102.json")).unwrap();
    fs::write(probe.path().join("103.json"), vec![b' '; 70_000]).unwrap();
    fs::create_dir(probe.path().join("104.json")).unwrap();
    fs::write(probe.path().join("105.json"), doc(105, "GPU-00000000")).unwrap();
    fs::write(probe.path().join(".100.json.tmp"), "half a file").unwrap();
    fs::write(probe.path().join(".105.json.tmp"), "left by a kill").unwrap();

    let mut reader = ProbeDirs::new(vec![probe.path().to_path_buf()], false, me)
        .with_proc_root(proc_root.path().to_path_buf());
    let scan = reader.scan(NOW);
    assert_eq!(scan.reports.keys().copied().collect::<Vec<_>>(), vec![100]);
    let said = scan.notices.join("\n");
    for (file, why) in [
        ("101.json", "runs as uid"),
        ("102.json", "symbolic link"),
        ("103.json", "oversized"),
        ("104.json", "not a regular file"),
    ] {
        assert!(said.contains(file) && said.contains(why), "{file}: {said}");
    }
    assert!(
        !probe.path().join("105.json").exists(),
        "an ended process's file is removed"
    );
    assert!(
        probe.path().join(".100.json.tmp").exists(),
        "temporary files are left alone"
    );
    // Said once: the same files give no new notices.
    let again = reader.scan(NOW);
    assert!(again.notices.is_empty(), "{:?}", again.notices);
    assert_eq!(again.reports.len(), 1);
}

#[test]
fn a_probe_file_is_read_and_parsed_only_when_it_changed() {
    let probe = tempfile::tempdir().unwrap();
    let proc_root = tempfile::tempdir().unwrap();
    proc_with(proc_root.path(), 100, my_uid());
    let path = probe.path().join("100.json");
    fs::write(&path, doc(100, "GPU-00000000")).unwrap();
    let mut reader = ProbeDirs::new(vec![probe.path().to_path_buf()], false, my_uid())
        .with_proc_root(proc_root.path().to_path_buf());
    let first = reader.scan(NOW).reports[&100].clone();
    // Rewritten in place to the same length and its modification time put back: the same
    // file as far as its stamp goes, so its last report is given again, unread.
    let mtime = fs::metadata(&path).unwrap().modified().unwrap();
    let other = doc(100, "GPU-11111111");
    assert_eq!(other.len(), doc(100, "GPU-00000000").len());
    fs::write(&path, &other).unwrap();
    fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert_eq!(reader.scan(NOW).reports[&100], first);
    // A new write (a new modification time) is read.
    let later = mtime + std::time::Duration::from_secs(1);
    fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let read = reader.scan(NOW).reports[&100].clone();
    assert_eq!(read.devices[0].uuid.as_deref(), Some("GPU-11111111"));
}

#[test]
fn figures_join_by_start_time_and_gpu_and_say_why_when_they_cannot() {
    let g = gpu(0, 80 * GIB, 10 * GIB, GIB);
    let p = process(873, &g, 10 * GIB, Framework::Pytorch, "python train.py");
    let report = parse(doc(873, &g.uuid).as_bytes(), 873).unwrap();
    let pool = report.pool_for(&p, NOW + 1000);
    assert_eq!(pool.value().and_then(|p| p.stranded), Some(5_293_211_648));

    let mut reused = p.clone();
    reused.start_time = Reading::Value(1_763_900_000);
    assert!(
        report
            .pool_for(&reused, NOW)
            .reason()
            .unwrap()
            .contains("earlier process")
    );
    assert!(
        report
            .pool_for(&p, NOW + 60_000)
            .reason()
            .unwrap()
            .contains("stale")
    );
    let other = gpu(1, 80 * GIB, 0, 0);
    let on_other = process(873, &other, GIB, Framework::Pytorch, "python train.py");
    assert!(
        report
            .pool_for(&on_other, NOW)
            .reason()
            .unwrap()
            .contains("no pool on this GPU")
    );
    let stopped = ProbeReport {
        stopped: Some("cannot write: read-only file system".into()),
        ..report.clone()
    };
    assert!(
        stopped
            .pool_for(&p, NOW)
            .reason()
            .unwrap()
            .contains("read-only")
    );
}

struct OneGpu(GpuReadout);
impl GpuReader for OneGpu {
    fn versions(&mut self) -> Result<MachineInfo, SourceError> {
        Ok(crate::source::scripted::build::machine())
    }
    fn read(&mut self) -> Result<GpuReadout, SourceError> {
        Ok(self.0.clone())
    }
}

/// /proc of the tests: every PID asked for exists, started as the scripted builder says.
struct Host;
impl HostReader for Host {
    fn host(&mut self) -> (String, Option<String>) {
        ("box".into(), None)
    }
    fn lookup(&mut self, pids: &[u32]) -> HashMap<u32, HostProcess> {
        pids.iter()
            .map(|&pid| {
                let g = gpu(0, 1, 0, 0);
                let p = process(pid, &g, 0, Framework::Pytorch, "python train.py");
                let h = HostProcess::of_sample(
                    p,
                    crate::source::ras::RasAddr::At(crate::source::ras::DEFAULT_ADDR),
                );
                (pid, h)
            })
            .collect()
    }
}

fn scan_of(pid: u32, uuid: &str) -> ProbeScan {
    let report = parse(doc(pid, uuid).as_bytes(), pid).unwrap();
    ProbeScan {
        reports: HashMap::from([(
            pid,
            ProbeReport {
                at_ms: crate::clock::unix_ms(),
                ..report
            },
        )]),
        notices: vec!["probe file /x/9.json ignored: oversized".into()],
        news: Vec::new(),
    }
}

#[test]
fn the_live_source_gives_probed_processes_their_pool_and_says_what_it_ignored() {
    let g = gpu(0, 80 * GIB, 10 * GIB, GIB);
    let listed = crate::source::GpuProcess {
        pid: 873,
        gpu_uuid: g.uuid.clone(),
        kind: crate::sample::ProcessKind::Compute,
        device_memory: Reading::Value(10 * GIB),
        util: Reading::na("not sampled"),
        gpu_instance_id: None,
        compute_instance_id: None,
    };
    let readout = GpuReadout {
        gpus: vec![g.clone()],
        processes: vec![
            listed.clone(),
            crate::source::GpuProcess { pid: 900, ..listed },
        ],
    };
    let pools = ScriptedPools::new([scan_of(873, &g.uuid)]);
    let mut source =
        LiveSource::new(OneGpu(readout), Host, LogWatch::new(&[])).with_pools(Box::new(pools));
    let s = source.sample().unwrap();
    let by_pid = |pid| s.processes.iter().find(|p| p.pid == pid).unwrap();
    assert_eq!(
        by_pid(873).pool.value().and_then(|p| p.allocated),
        Some(4_328_521_728)
    );
    assert_eq!(by_pid(900).pool.reason(), Some(NOT_PROBED));
    assert_eq!(
        s.notices,
        vec!["probe file /x/9.json ignored: oversized".to_string()]
    );
}

#[test]
fn without_nvml_a_probed_process_still_shows_its_pool() {
    let pools = ScriptedPools::new([scan_of(4242, "GPU-00000000")]);
    let mut source = LiveSource::new(NoGpu::new("no NVML".into()), Host, LogWatch::new(&[]))
        .with_pools(Box::new(pools));
    let s = source.sample().unwrap();
    assert_eq!(s.processes.len(), 1);
    let p = &s.processes[0];
    assert_eq!((p.pid, p.gpu_uuid.as_str()), (4242, "GPU-00000000"));
    assert_eq!(p.device_memory.reason(), Some("not listed by NVML"));
    assert_eq!(p.pool.value().and_then(|p| p.reserved), Some(9_621_733_376));
}

#[test]
fn the_default_directory_is_per_user() {
    assert_eq!(default_dir(1000, None), Path::new("/tmp/gpumon-1000/probe"));
    let run = tempfile::tempdir().unwrap();
    assert_eq!(
        default_dir(1000, Some(run.path().as_os_str())),
        run.path().join("gpumon/probe")
    );
    assert_eq!(
        default_dir(7, Some(std::ffi::OsStr::new("relative/dir"))),
        Path::new("/tmp/gpumon-7/probe")
    );
}

#[test]
fn pools_survive_a_recording_and_a_version_1_recording_reads_as_not_recorded() {
    use crate::recording::{Header, Reader, Writer};
    let g = gpu(0, 80 * GIB, 10 * GIB, GIB);
    let report = parse(doc(873, &g.uuid).as_bytes(), 873).unwrap();
    let mut p = process(873, &g, 10 * GIB, Framework::Pytorch, "python train.py");
    p.pool = report.pool_for(&p, NOW);
    let unprobed = process(874, &g, GIB, Framework::Jax, "python serve.py");
    let sample = crate::sample::Sample {
        at_ms: NOW,
        gpus: vec![g],
        processes: vec![p, unprobed],
        notices: vec!["probe file /x ignored: oversized".into()],
        ..Default::default()
    };
    let mut bytes = Vec::new();
    {
        let header = Header::new(crate::source::scripted::build::machine(), 1000);
        let mut w = Writer::new(&mut bytes, &header).unwrap();
        w.sample(&sample).unwrap();
    }
    let (header, mut r) = Reader::open("rec", bytes.as_slice()).unwrap();
    assert_eq!(header.schema, "gpumon.recording/4");
    assert_eq!(r.next_sample().unwrap().unwrap(), sample);

    // The same sample as version 1 wrote it: no pool, no notices.
    let text = String::from_utf8(bytes)
        .unwrap()
        .replace("gpumon.recording/4", "gpumon.recording/1");
    let old: String = text
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            if let Some(ps) = v.get_mut("processes").and_then(|p| p.as_array_mut()) {
                for p in ps {
                    let o = p.as_object_mut().unwrap();
                    o.remove("pool");
                    if let Some(na) = o.get_mut("unavailable").and_then(|n| n.as_object_mut()) {
                        na.remove("pool");
                    }
                }
            }
            if let Some(o) = v.as_object_mut() {
                o.remove("notices");
            }
            v.to_string() + "\n"
        })
        .collect();
    let (_, mut r) = Reader::open("old", old.as_bytes()).unwrap();
    let back = r.next_sample().unwrap().unwrap();
    assert_eq!(back.processes[0].pool.reason(), Some("not recorded"));
    assert!(back.notices.is_empty());
}
