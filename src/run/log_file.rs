//! The run's log: `DIR/gpumon-run-<cmd>-<UTC>.log`, always a new file (never one that exists),
//! readable by its owner only.

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::snapshot::time_s;

/// Names tried when the first one exists (a second run within the same second).
const TRIES: u32 = 100;

/// The created log.
#[derive(Debug)]
pub struct RunLog {
    /// The path as the user would write it: `DIR/name`, or the bare name in the current dir.
    pub shown: String,
    /// The absolute path, as `/proc/PID/fd` links name it.
    pub absolute: PathBuf,
    pub file: File,
}

/// `gpumon-run-<cmd>-<YYYYMMDDTHHMMSSZ>.log`, the command's file name reduced to
/// `[A-Za-z0-9._-]` (at most 32 characters).
pub fn file_name(program: &OsStr, at_secs: u64) -> String {
    let base = Path::new(program)
        .file_name()
        .unwrap_or(program)
        .to_string_lossy();
    let cmd: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(32)
        .collect();
    let cmd = cmd.trim_start_matches('.');
    let cmd = if cmd.is_empty() { "cmd" } else { cmd };
    let stamp: String = time_s(at_secs)
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect();
    format!("gpumon-run-{cmd}-{stamp}.log")
}

/// Creates the log in `dir` (mode 0600); a name that exists gets `-2`, `-3`, … before `.log`.
pub fn create(dir: &Path, program: &OsStr, at_secs: u64) -> io::Result<RunLog> {
    let name = file_name(program, at_secs);
    let stem = name.trim_end_matches(".log");
    let absolute_dir = dir.canonicalize()?;
    for n in 1..=TRIES {
        let name = if n == 1 {
            name.clone()
        } else {
            format!("{stem}-{n}.log")
        };
        let absolute = absolute_dir.join(&name);
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&absolute)
        {
            Ok(file) => {
                let shown = if dir == Path::new(".") || dir.as_os_str().is_empty() {
                    name
                } else {
                    dir.join(&name).display().to_string()
                };
                return Ok(RunLog {
                    shown,
                    absolute,
                    file,
                });
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("{TRIES} logs named {stem}… exist already"),
    ))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn names_are_safe_and_never_reused() {
        let at = 1_795_319_012;
        assert_eq!(
            file_name(OsStr::new("/usr/bin/python3"), at),
            "gpumon-run-python3-20261122T034332Z.log"
        );
        assert_eq!(
            file_name(OsStr::new("../a b;rm"), at),
            "gpumon-run-a_b_rm-20261122T034332Z.log"
        );
        assert_eq!(
            file_name(OsStr::new(".."), at),
            "gpumon-run-cmd-20261122T034332Z.log"
        );
        let dir = tempfile::tempdir().unwrap();
        let a = create(dir.path(), OsStr::new("sh"), at).unwrap();
        let b = create(dir.path(), OsStr::new("sh"), at).unwrap();
        assert!(a.absolute.is_absolute());
        assert_eq!(
            b.absolute.file_name().unwrap(),
            "gpumon-run-sh-20261122T034332Z-2.log"
        );
        assert!(b.shown.ends_with("-2.log") && b.shown.starts_with('/'));
        let mode = std::fs::metadata(&a.absolute).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(create(Path::new("/nonexistent/dir"), OsStr::new("sh"), at).is_err());
    }
}
