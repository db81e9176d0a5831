//! Data safety: whole files only, owner-only modes, a full disk reported, bounded alerts.

use std::io::Write;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gpumon::model::{Event, MAX_ALERTS};
use gpumon::record::{self, RecordError};
use gpumon::recording::{Header, Writer};
use gpumon::sampler::Factory;
use gpumon::screen::Msg;
use gpumon::snapshot::{self, Snapshot};
use gpumon::source::scripted::{ScriptedSource, build};
use gpumon::source::{Sample, Source};

use super::state;

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn sample(at_ms: u64) -> Sample {
    Sample {
        at_ms,
        gpus: vec![build::gpu(0, 100, 10, 1)],
        ..Default::default()
    }
}

fn scripted(n: u64) -> Factory {
    Arc::new(move || {
        let script: Vec<_> = (0..n).map(|i| Ok(sample(i))).collect();
        Ok(Box::new(ScriptedSource::new(build::machine(), script)) as Box<dyn Source>)
    })
}

fn assert_dev_full_intact() {
    let meta = std::fs::metadata("/dev/full").unwrap();
    assert!(
        meta.file_type().is_char_device(),
        "/dev/full is still the device"
    );
}

#[test]
fn snapshots_replace_whole_files_owner_only_and_leave_no_temp() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    std::fs::write(&path, "old").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    snapshot::write_atomic(&path, b"{\"new\": true}").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"new\": true}");
    assert_eq!(mode(&path), 0o600);
    let snap = Snapshot::from_state(&state(), 1_763_800_000_000);
    let named = snapshot::write_to_dir(&snap, dir.path()).unwrap();
    assert_eq!(mode(&named), 0o600);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "no temp file left: {names:?}");
    let missing = snapshot::write_atomic(dir.path().join("no/such/dir/s.json"), b"{}");
    assert!(missing.unwrap_err().to_string().contains("no/such/dir"));
}

#[test]
fn a_full_disk_is_reported_for_snapshots_and_the_device_is_not_replaced() {
    let err = snapshot::write_atomic("/dev/full", b"{}")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("/dev/full: No space left on device"),
        "{err}"
    );
    assert_dev_full_intact();
}

/// A file that tells what was written but not yet flushed, and what was flushed.
#[derive(Clone, Default)]
struct Disk(Arc<Mutex<(Vec<u8>, Vec<u8>)>>);

impl Write for Disk {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let mut d = self.0.lock().unwrap();
        let pending = std::mem::take(&mut d.0);
        d.1.extend_from_slice(&pending);
        Ok(())
    }
}

#[test]
fn recordings_are_flushed_line_by_line() {
    let disk = Disk::default();
    let mut w = Writer::new(disk.clone(), &Header::new(build::machine(), 1000)).unwrap();
    for i in 0..3 {
        w.sample(&sample(i)).unwrap();
        let d = disk.0.lock().unwrap();
        assert!(d.0.is_empty(), "nothing waits unflushed after a line");
        assert!(d.1.ends_with(b"\n"));
        assert_eq!(d.1.iter().filter(|b| **b == b'\n').count(), 2 + i as usize);
    }
}

#[tokio::test(start_paused = true)]
async fn a_recording_is_owner_only_even_over_an_existing_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ndjson");
    std::fs::write(&path, "old contents\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let pending = std::future::pending::<i32>();
    let n = record::record(
        scripted(2),
        &path,
        Duration::from_secs(1),
        None,
        None,
        pending,
    )
    .await;
    assert_eq!(n.unwrap().samples, 2);
    assert_eq!(mode(&path), 0o600);
    assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_full_disk_is_reported_for_recordings() {
    let pending = std::future::pending::<i32>();
    let got = record::record(
        scripted(2),
        Path::new("/dev/full"),
        Duration::from_secs(1),
        None,
        None,
        pending,
    )
    .await;
    let Err(e @ RecordError::Write { .. }) = got else {
        panic!("a full disk is an error: {got:?}");
    };
    assert!(
        e.to_string()
            .starts_with("/dev/full: No space left on device"),
        "{e}"
    );
    assert_dev_full_intact();
    assert_eq!(
        mode(Path::new("/dev/full")) & 0o066,
        0o066,
        "its mode is left alone"
    );
}

#[test]
fn alerts_are_capped_and_the_dropped_ones_counted() {
    let failure: gpumon::oom::failure::Failure = serde_json::from_value(serde_json::json!({
        "at_ms": 1, "log": "train.log", "line": 1, "pid": 7,
        "message": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    }))
    .unwrap();
    let mut st = state();
    st.update(Msg::from(Event::Started(build::machine())));
    for i in 0..(MAX_ALERTS as u64 + 50) {
        let mut s = sample(1000 * i);
        s.failures = vec![failure.clone()];
        st.update(Msg::from(Event::Sample(s)));
    }
    assert_eq!(st.machine().alerts.len(), MAX_ALERTS);
    assert!(
        st.machine().alerts_dropped >= 50,
        "{}",
        st.machine().alerts_dropped
    );
    let snap = Snapshot::from_state(&st, 1_000_000);
    assert_eq!(
        (snap.alerts.len() as u64, snap.alerts_dropped),
        (MAX_ALERTS as u64, st.machine().alerts_dropped)
    );
}
