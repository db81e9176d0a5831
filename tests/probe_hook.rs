//! Runs the allocator probe hook's own tests (`tests/python`, Python standard library only), and
//! a job started with the hook the binary writes (`gpumon probe env`, `gpumon probe hook DIR`).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use gpumon::sample::{Framework, Inside, Launcher};
use gpumon::source::launcher::merge;
use gpumon::source::probe::file::parse;

const GPUMON: &str = env!("CARGO_BIN_EXE_gpumon");

/// A job that waits for its probe file and prints where its probe's parts were loaded from.
const JOB: &str = "import os, sys, time
path = os.path.join(os.environ['GPUMON_PROBE_DIR'], '%d.json' % os.getpid())
deadline = time.monotonic() + 10
while not os.path.exists(path) and time.monotonic() < deadline:
    time.sleep(0.02)
print(os.path.exists(path), sys.modules['_gpumon_probe'].__path__[0])
";

/// Runs `code` under `vars` (nothing else of gpumon's or Python's from this environment): its
/// standard output.
fn python(code: &str, vars: &[(String, String)]) -> String {
    let mut cmd = Command::new("python3");
    cmd.arg("-c").arg(code);
    for (k, _) in std::env::vars() {
        if k.starts_with("GPUMON_") || k.starts_with("PYTHON") || k.starts_with("FAKE_") {
            cmd.env_remove(k);
        }
    }
    // no __pycache__ in the checkout: set after the removals above (CI sets it too)
    cmd.env("PYTHONDONTWRITEBYTECODE", "1")
        .envs(vars.iter().cloned());
    let started = Instant::now();
    let out = cmd.output().expect("python3");
    assert!(started.elapsed() < Duration::from_secs(60));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// Runs JOB under `vars`: whether its probe wrote its file, and where its parts came from.
fn job(vars: &[(String, String)]) -> (bool, String) {
    let text = python(JOB, vars);
    let (written, parts) = text.trim().split_once(' ').unwrap_or_default();
    (written == "True", parts.to_string())
}

#[test]
fn a_job_under_probe_env_loads_the_parts_of_its_own_version() {
    let base = tempfile::tempdir().unwrap();
    let (hook, probe) = (base.path().join("hook"), base.path().join("probe"));
    let out = Command::new(GPUMON)
        .args(["probe", "env", "--hook-dir"])
        .arg(&hook)
        .arg("--probe-dir")
        .arg(&probe)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let exports = String::from_utf8(out.stdout).unwrap();
    let vars: Vec<(String, String)> = exports
        .lines()
        .filter_map(|l| l.strip_prefix("export ")?.split_once('='))
        .map(|(k, v)| {
            let v = v.split('"').next().unwrap_or(v).trim_matches('\'');
            (k.to_string(), v.to_string())
        })
        .collect();
    let (written, parts) = job(&vars);
    assert!(written, "the probe wrote no file");
    let link = std::fs::read_link(hook.join("_gpumon_probe")).unwrap();
    assert!(
        link.to_string_lossy().starts_with(".gpumon_probe-"),
        "{link:?}"
    );
    let real = std::fs::canonicalize(hook.join(&link)).unwrap();
    assert_eq!(
        Path::new(&parts),
        real,
        "loaded from its version's directory"
    );
}

#[test]
fn a_job_loads_the_hook_probe_hook_wrote_for_an_image() {
    let base = tempfile::tempdir().unwrap();
    let hook = base.path().join("image/hook");
    let out = Command::new(GPUMON)
        .args(["probe", "hook"])
        .arg(&hook)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        hook.join("sitecustomize.py").display().to_string()
    );
    let dir = hook.display().to_string();
    let probe = base.path().join("probe").display().to_string();
    let vars = [
        ("PYTHONPATH".to_string(), dir.clone()),
        ("GPUMON_PROBE_HOOK_DIR".to_string(), dir.clone()),
        ("GPUMON_PROBE_DIR".to_string(), probe),
    ];
    let (written, parts) = job(&vars);
    assert!(written, "the probe wrote no file");
    let real = std::fs::canonicalize(&hook).unwrap().join("_gpumon_probe");
    assert_eq!(Path::new(&parts), real, "a plain directory");
}

#[test]
fn python_probe_hook_tests_pass() {
    let out = Command::new("python3")
        .args(["-m", "unittest", "discover", "-s", "tests/python", "-v"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("PYTHONPATH")
        .env_remove("GPUMON_PROBE_DIR")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap_or_else(|e| {
            panic!("python3 could not be started ({e}); it is needed to test python/gpumon/probe")
        });
    assert!(
        out.status.success(),
        "python3 -m unittest discover -s tests/python failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A job that joins a process group of the fake torch (or JAX) and waits for its probe to say so;
/// prints its pid.
const RANKED: &str = "import json, os, sys, time
sys.path.insert(0, os.environ['FAKES'])
if os.environ['FRAMEWORK'] == 'pytorch':
    import torch.distributed as dist
    os.environ.update(MASTER_ADDR='10.0.0.1', MASTER_PORT='29500', TORCHELASTIC_RUN_ID='job-7')
    dist.init_process_group('nccl', rank=1, world_size=2)
else:
    from jax._src import distributed
    distributed.global_state.initialize('10.0.0.1:1234', 4, 3)
path = os.path.join(os.environ['GPUMON_PROBE_DIR'], '%d.json' % os.getpid())
deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    try:
        with open(path) as f:
            if json.load(f)['distributed']:
                break
    except (OSError, ValueError):
        pass
    time.sleep(0.02)
print(os.getpid())
";

#[test]
fn the_rank_a_probe_writes_is_the_rank_gpumon_reads() {
    let root = env!("CARGO_MANIFEST_DIR");
    for (framework, expected, job_id) in [
        (
            "pytorch",
            Inside {
                framework: Framework::Pytorch,
                backend: Some("nccl".into()),
                rank: Some(1),
                world_size: Some(2),
                master: Some("10.0.0.1:29500".into()),
                run_id: Some("job-7".into()),
            },
            "torchrun:job-7",
        ),
        (
            "jax",
            Inside {
                framework: Framework::Jax,
                backend: None,
                rank: Some(3),
                world_size: Some(4),
                master: Some("10.0.0.1:1234".into()),
                run_id: None,
            },
            "jax:10.0.0.1:1234",
        ),
    ] {
        let probe = tempfile::tempdir().unwrap();
        let vars = [
            ("PYTHONPATH", format!("{root}/python/gpumon/probe")),
            ("GPUMON_PROBE_DIR", probe.path().display().to_string()),
            ("GPUMON_PROBE_INTERVAL_MS", "100".into()),
            ("FAKES", format!("{root}/tests/python/fakes")),
            ("FRAMEWORK", framework.into()),
        ]
        .map(|(k, v)| (k.to_string(), v));
        let pid: u32 = python(RANKED, &vars).trim().parse().unwrap();
        let bytes = std::fs::read(probe.path().join(format!("{pid}.json"))).unwrap();
        let report = parse(&bytes, pid).unwrap();
        assert_eq!(report.distributed.as_ref(), Some(&expected), "{framework}");
        let rank = merge(None, report.distributed, "gpu-07").unwrap();
        assert_eq!(
            (
                rank.launcher,
                rank.rank,
                rank.world_size,
                rank.job.as_deref()
            ),
            (
                Launcher::Probe,
                expected.rank,
                expected.world_size,
                Some(job_id)
            ),
            "{framework}"
        );
    }
}

/// A job whose main thread waits in `next_batch`, then raises an OOM-like error.
const STUCK_THEN_OOM: &str = "import sys, threading
sys.path.insert(0, __import__('os').environ['FAKES'])
import torch
def next_batch():
    threading.Event().wait(4.0)
next_batch()
raise torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 2.00 GiB')
";

/// gpumon's reader of the probe directory, on a real probed job: where its main thread stood
/// while it waited, then, once the process has gone, its end, read from its last file.
#[test]
fn gpumon_reads_where_a_real_job_stood_and_how_it_ended() {
    use gpumon::sample::WhereNews;
    use gpumon::source::probe::PoolReader;
    use gpumon::source::probe::dir::ProbeDirs;
    let root = env!("CARGO_MANIFEST_DIR");
    let probe = tempfile::tempdir().unwrap();
    let mut cmd = Command::new("python3");
    cmd.arg("-c").arg(STUCK_THEN_OOM);
    for (k, _) in std::env::vars() {
        if k.starts_with("GPUMON_") || k.starts_with("PYTHON") || k.starts_with("FAKE_") {
            cmd.env_remove(k);
        }
    }
    let mut child = cmd
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONPATH", format!("{root}/python/gpumon/probe"))
        .env("GPUMON_PROBE_DIR", probe.path())
        .env("GPUMON_PROBE_INTERVAL_MS", "100")
        .env("GPUMON_PROBE_STILL_S", "1")
        .env("FAKES", format!("{root}/tests/python/fakes"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let uid = rustix::process::getuid().as_raw();
    let mut dirs = ProbeDirs::new(vec![probe.path().to_path_buf()], false, uid);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut place = None;
    while place.is_none() && Instant::now() < deadline {
        let scan = dirs.scan(0);
        place = scan
            .news
            .into_iter()
            .find(|n| n.pid == pid)
            .and_then(|n| match n.main_where {
                Some(WhereNews::At(w)) => Some(w),
                _ => None,
            });
        std::thread::sleep(Duration::from_millis(50));
    }
    let place = place.expect("no place of the main thread read");
    assert!(!place.asked && place.still_ms() >= 1000, "{place:?}");
    assert!(
        place
            .frames
            .iter()
            .any(|f| f.line == 5 && f.function == "next_batch"),
        "{place:?}"
    );
    assert!(!child.wait().unwrap().success());
    let mut end = None;
    while end.is_none() && Instant::now() < deadline {
        end = dirs
            .scan(0)
            .news
            .into_iter()
            .find(|n| n.pid == pid)
            .and_then(|n| n.end);
        std::thread::sleep(Duration::from_millis(50));
    }
    let end = end.expect("no end read");
    assert_eq!(
        end.words(),
        "raised torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    );
    assert!(
        !probe.path().join(format!("{pid}.json")).exists(),
        "the ended process's file is removed once read"
    );
}
