//! Writing files safely: a temp file in the target's directory, mode 0600, fsync, then rename,
//! so a reader never sees half a file and a failure (full disk, unwritable dir) is an error.

use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use super::{Snapshot, SnapshotError};

/// Names tried after the first when a file of the same second exists.
const MAX_SUFFIX: u32 = 99;

/// Writes `bytes` to `path` atomically (replacing a file already there), readable by the owner only.
/// A path that is not a regular file (`/dev/stdout`, a FIFO, `/dev/full`) is written in place:
/// renaming over it would replace the device or pipe itself.
pub fn write_atomic(path: impl AsRef<Path>, bytes: &[u8]) -> Result<(), SnapshotError> {
    let path = path.as_ref();
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|mut f| f.write_all(bytes).and_then(|()| f.flush()))
            .map_err(|e| io(path, e));
    }
    let tmp = temp_with(path, bytes)?;
    tmp.persist(path).map_err(|e| io(path, e.error))?;
    sync_dir(path);
    Ok(())
}

/// Writes the snapshot's JSON into `dir` as `gpumon-<host>-<UTC time>.json`; never replaces a
/// file: a second snapshot in the same second gets `-2`, `-3`, ...
pub fn write_to_dir(snap: &Snapshot, dir: impl AsRef<Path>) -> Result<PathBuf, SnapshotError> {
    let dir = dir.as_ref();
    let name = file_name(snap);
    let stem = name.trim_end_matches(".json");
    let mut tmp = temp_with(&dir.join(&name), &snap.to_json())?;
    for n in 1..=MAX_SUFFIX + 1 {
        let path = if n == 1 {
            dir.join(&name)
        } else {
            dir.join(format!("{stem}-{n}.json"))
        };
        match tmp.persist_noclobber(&path) {
            Ok(_) => {
                sync_dir(&path);
                return Ok(path);
            }
            Err(e) if e.error.kind() == ErrorKind::AlreadyExists => tmp = e.file,
            Err(e) => return Err(io(&path, e.error)),
        }
    }
    Err(io(
        &dir.join(&name),
        std::io::Error::new(
            ErrorKind::AlreadyExists,
            format!("{} snapshots of this second already exist", MAX_SUFFIX + 1),
        ),
    ))
}

/// `gpumon-<host>-<YYYYMMDDTHHMMSSZ>.json`, the host reduced to `[A-Za-z0-9._-]`.
pub fn file_name(snap: &Snapshot) -> String {
    let host: String = snap
        .machine
        .host
        .as_deref()
        .unwrap_or("unknown-host")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    let host = host.trim_start_matches('.');
    let host = if host.is_empty() {
        "unknown-host"
    } else {
        host
    };
    let stamp: String = super::time_s(snap.taken_at_ms / 1000)
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect();
    format!("gpumon-{host}-{stamp}.json")
}

/// A synced temp file holding `bytes`, next to `target`.
fn temp_with(target: &Path, bytes: &[u8]) -> Result<NamedTempFile, SnapshotError> {
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".gpumon-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| io(dir, e))?;
    owner_only(&tmp).map_err(|e| io(tmp.path(), e))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| io(target, e))?;
    Ok(tmp)
}

#[cfg(unix)]
fn owner_only(tmp: &NamedTempFile) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o600))
}

#[cfg(not(unix))]
fn owner_only(_tmp: &NamedTempFile) -> std::io::Result<()> {
    Ok(())
}

/// Makes the rename durable; best effort, as some file systems refuse to sync a directory.
fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && let Ok(d) = std::fs::File::open(dir)
    {
        let _ = d.sync_all();
    }
}

fn io(path: &Path, source: std::io::Error) -> SnapshotError {
    SnapshotError::Io {
        path: path.to_path_buf(),
        source,
    }
}
