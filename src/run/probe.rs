//! Getting the allocator probe into a job: the private directories the hook and the probes'
//! files go to, and the environment that puts the hook first on `PYTHONPATH` and tells it where
//! to write (the hook's files are written by `hook_dir`).
//!
//! Used by `gpumon run` and by `gpumon probe env` (for launchers gpumon does not start): both
//! write the hook into the same lasting directory by default, next to the probe directory.

use std::ffi::{OsStr, OsString};
use std::fs::{self, DirBuilder};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Whether `gpumon run` and `gpumon probe env` start jobs recording their allocation history
/// without `--record-allocations`: off. On an H100 recording cost a GPT-2 small training step no
/// measurable time and 40.5 MB of host memory, but the first block map of a job recording it
/// took 5.8 s on a 50,000-block pool (PyTorch symbolises every recorded stack at its first
/// snapshot), past the 100 ms a map may cost a job (docs/benchmarks.md, "Allocation history").
pub const RECORD_BY_DEFAULT: bool = false;
/// Allocation events a recording keeps unless `--record-entries` says otherwise.
pub const RECORD_ENTRIES: u64 = 100_000;

/// The environment a probed job starts with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeEnv {
    pub probe_dir: PathBuf,
    pub hook_dir: PathBuf,
    pub interval_ms: u64,
    /// `PYTHONPATH` with the hook directory first, then what the job had.
    pub python_path: OsString,
    /// Record allocation history from the start, keeping this many events; `None`: not asked.
    pub record: Option<u64>,
}

impl ProbeEnv {
    pub fn new(
        probe_dir: PathBuf,
        hook_dir: PathBuf,
        interval_ms: u64,
        old_path: Option<&OsStr>,
    ) -> Self {
        let mut python_path = hook_dir.clone().into_os_string();
        if let Some(old) = old_path.filter(|p| !p.is_empty()) {
            python_path.push(":");
            python_path.push(old);
        }
        ProbeEnv {
            probe_dir,
            hook_dir,
            interval_ms: interval_ms.clamp(100, 60_000),
            python_path,
            record: None,
        }
    }

    /// Also records allocation history from the start (`GPUMON_PROBE_RECORD=1`), keeping
    /// `entries` events (`None`: not recording).
    pub fn recording(mut self, entries: Option<u64>) -> Self {
        self.record = entries;
        self
    }

    /// The variables to set, in order.
    pub fn vars(&self) -> Vec<(&'static str, OsString)> {
        let mut vars = vec![
            ("GPUMON_PROBE_DIR", self.probe_dir.clone().into_os_string()),
            (
                "GPUMON_PROBE_HOOK_DIR",
                self.hook_dir.clone().into_os_string(),
            ),
            (
                "GPUMON_PROBE_INTERVAL_MS",
                self.interval_ms.to_string().into(),
            ),
            ("PYTHONPATH", self.python_path.clone()),
        ];
        if let Some(n) = self.record {
            vars.push(("GPUMON_PROBE_RECORD", "1".into()));
            vars.push(("GPUMON_PROBE_RECORD_ENTRIES", n.to_string().into()));
        }
        vars
    }

    /// `export` lines for a POSIX shell; PYTHONPATH keeps what the shell has at that moment.
    pub fn exports(&self) -> String {
        let q = |p: &Path| shell_quote(&p.to_string_lossy());
        let mut text = format!(
            "export GPUMON_PROBE_DIR={}\nexport GPUMON_PROBE_HOOK_DIR={}\nexport GPUMON_PROBE_INTERVAL_MS={}\nexport PYTHONPATH={}\"${{PYTHONPATH:+:$PYTHONPATH}}\"\n",
            q(&self.probe_dir),
            q(&self.hook_dir),
            self.interval_ms,
            q(&self.hook_dir),
        );
        if let Some(n) = self.record {
            text.push_str(&format!(
                "export GPUMON_PROBE_RECORD=1\nexport GPUMON_PROBE_RECORD_ENTRIES={n}\n"
            ));
        }
        text
    }
}

/// Single-quoted for a POSIX shell.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Creates `dir` (and its parents) owner-only, or checks that an existing one is the user's own
/// and writable by nobody else: a directory someone else made in /tmp is refused.
pub fn private_dir(dir: &Path, uid: u32) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let meta = fs::symlink_metadata(dir)?;
    if !meta.is_dir() {
        return Err(io::Error::other(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    if meta.uid() != uid {
        return Err(io::Error::other(format!(
            "{} belongs to uid {}, not to this user (uid {uid}): refusing to use it",
            dir.display(),
            meta.uid()
        )));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(io::Error::other(format!(
            "{} is writable by others (mode {:o}): refusing to use it",
            dir.display(),
            meta.mode() & 0o777
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_hook_goes_first_on_the_python_path_and_the_exports_quote_paths() {
        let env = ProbeEnv::new(
            PathBuf::from("/tmp/gpumon-7/probe"),
            PathBuf::from("/tmp/it's/hook"),
            5,
            Some(OsStr::new("/opt/lib")),
        );
        assert_eq!(env.python_path, OsString::from("/tmp/it's/hook:/opt/lib"));
        assert_eq!(env.interval_ms, 100, "clamped");
        let text = env.exports();
        assert!(
            text.contains("export GPUMON_PROBE_HOOK_DIR='/tmp/it'\\''s/hook'"),
            "{text}"
        );
        assert!(
            text.contains("export PYTHONPATH='/tmp/it'\\''s/hook'\"${PYTHONPATH:+:$PYTHONPATH}\"")
        );
        let bare = ProbeEnv::new("/p".into(), "/h".into(), 1000, Some(OsStr::new("")));
        assert_eq!(bare.python_path, OsString::from("/h"));
        assert!(!bare.exports().contains("RECORD"), "off unless asked");
        assert!(bare.vars().iter().all(|(k, _)| !k.contains("RECORD")));
        let rec = bare.recording(Some(5000));
        assert!(
            rec.exports().ends_with(
                "export GPUMON_PROBE_RECORD=1\nexport GPUMON_PROBE_RECORD_ENTRIES=5000\n"
            )
        );
        assert!(rec.vars().contains(&("GPUMON_PROBE_RECORD", "1".into())));
    }

    #[test]
    fn directories_are_private_and_someone_elses_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let uid = rustix::process::getuid().as_raw();
        let dir = base.path().join("a/b");
        private_dir(&dir, uid).unwrap();
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        assert!(
            private_dir(&dir, uid + 1)
                .unwrap_err()
                .to_string()
                .contains("refusing")
        );
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        assert!(
            private_dir(&dir, uid)
                .unwrap_err()
                .to_string()
                .contains("writable by others")
        );
    }
}
