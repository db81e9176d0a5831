//! The allocator probe end to end: `gpumon run` starts a Python job that loads a stand-in
//! `torch` (tests/python/fakes) reporting a fragmented cache; the probe inside the job writes its
//! figures, gpumon reads them and shows the pool on screen. Without NVML (as in CI) the probed
//! job is listed from its probe file alone. Needs tmux and python3 (`.ci/run` installs tmux).

#[path = "common/tmux.rs"]
mod tmux;

use tmux::Session;

const JOB: &str = r#"
import time, torch
GiB = 2**30
torch.cuda._stats[0] = {
    "allocated_bytes.all.current": 4 * GiB,
    "reserved_bytes.all.current": 9 * GiB,
    "inactive_split_bytes.all.current": 5 * GiB,
    "num_alloc_retries": 0,
    "num_ooms": 0,
}
torch.cuda._initialized = True
print("job ready", flush=True)
time.sleep(60)
"#;

/// `gpumon run` of the Python job `source` (the fake torch on its path, the probe writing into
/// its own directory) in a 120x40 tmux session `name`: the temporary directory that holds both
/// (kept while the test runs), the probe directory, and the session.
fn probed_run(name: &str, source: &str) -> (tempfile::TempDir, std::path::PathBuf, Session) {
    let fakes = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/fakes");
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job.py");
    std::fs::write(&job, source).unwrap();
    let probe_dir = dir.path().join("probe");
    let command = format!(
        "env PYTHONDONTWRITEBYTECODE=1 PYTHONPATH={fakes} GPUMON_PROBE_DIR={} {} run -- python3 {}",
        probe_dir.display(),
        env!("CARGO_BIN_EXE_gpumon"),
        job.display()
    );
    let s = Session::run(name, &command, (120, 40));
    (dir, probe_dir, s)
}

#[test]
fn gpumon_run_shows_the_pool_of_a_probed_job() {
    let (_dir, probe_dir, s) = probed_run("probe", JOB);
    let screen = s.wait_for(
        |t| t.contains("4G/9G") && t.contains("torch pool ["),
        "the probed job's pool",
    );
    assert!(screen.contains("ALLOC/POOL"), "{screen}");
    assert!(
        screen.contains("alloc 4G  free 5G  stranded 5G"),
        "{screen}"
    );
    // Without NVML its device memory is n/a, and so what lies outside its pool (the reason,
    // "not listed by NVML", is cut once the alerts pane takes half the width).
    assert!(screen.contains("outside it n/a ("), "{screen}");
    // One file, the job's, owner-only, in a directory gpumon made owner-only.
    let files: Vec<_> = std::fs::read_dir(&probe_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&files[0]), 0o600);
    assert_eq!(mode(&probe_dir), 0o700);
    s.keys(&["q"]);
    s.wait_for(|t| t.contains("k stop it"), "the quit question");
    s.keys(&["k"]);
    s.assert_restored(143);
}

const FAILING_JOB: &str = r#"
import time, torch
torch.cuda._stats[0] = {"allocated_bytes.all.current": 2**30, "reserved_bytes.all.current": 2**31,
    "inactive_split_bytes.all.current": 0, "num_alloc_retries": 0, "num_ooms": 0}
torch.cuda._initialized = True
time.sleep(3)
raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
"#;

/// A probed job that raises an OOM: once it has gone, gpumon reads its probe's last file once
/// more, and its end is on the process in the snapshot `s` writes.
#[test]
fn the_end_of_a_probed_job_is_read_after_it_has_gone() {
    let (_dir, probe_dir, s) = probed_run("probe-end", FAILING_JOB);
    s.wait_for(|t| t.contains("1G/2G"), "the probed job's pool");
    s.wait_for(|t| t.contains("exited with status 1"), "the job's end");
    // The end is read from the last file a sample or two after the process has gone.
    let mut end = serde_json::Value::Null;
    for _ in 0..20 {
        s.keys(&["s"]);
        s.wait_for(|t| t.contains("snapshot written"), "the snapshot");
        let newest = std::fs::read_dir(s.path(""))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .max()
            .unwrap();
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(newest).unwrap()).unwrap();
        end = doc["processes"][0]["end"].clone();
        if !end.is_null() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    assert_eq!(end["how"], "exception", "{end}");
    assert_eq!(end["exception"]["type"], "torch.OutOfMemoryError", "{end}");
    assert!(
        std::fs::read_dir(&probe_dir).unwrap().next().is_none(),
        "its file is removed once read"
    );
    s.keys(&["q"]);
    s.assert_restored(1);
}
