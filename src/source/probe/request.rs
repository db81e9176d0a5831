//! gpumon's side of asking a probe for something (docs/memory-map-format.md): one line
//! `gpumon.request/1 VERB ID` in `<pid>.request` beside the process's probe file, written
//! atomically through the directory (never through a link), mode 0600, owned by the directory's
//! owner; the probe's answer read back from `<pid>.json`; and an export moved to where the user
//! wants it (copied from a descriptor opened without following links, never parsed).
//!
//! Only the app loop, `serve`'s and `record`'s loops and `snapshot --export` call this: keys
//! return a `screen::Command` and never do I/O themselves.

use std::fs;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::{AtFlags, Mode, OFlags, fchown, fstat, openat, renameat, unlinkat};
use rustix::process::geteuid;

use super::dir::ProbeDirs;
use super::file;
use crate::sample::pool_map::ProbeAnswer;
pub use crate::sample::request::{Ask, Purpose, Verb, purpose_of, request_id};

/// Writes requests, reads answers and takes exports (the probe directories in production).
pub trait Requests: Send + Sync {
    /// Writes the request; the error says why not ("pid 4312 has exited", "… has no probe").
    fn send(&self, ask: &Ask) -> Result<(), String>;
    /// The probe's last answer (`None` while it has answered nothing).
    fn answer(&self, pid: u32) -> Result<Option<ProbeAnswer>, String>;
    /// Moves the export `name` the probe of `pid` wrote to `to` (0600); the path written.
    fn take_export(&self, pid: u32, name: &str, to: &Path) -> Result<PathBuf, String>;
}

/// The real requests: beside the probe files of the directories gpumon reads.
pub struct ProbeRequests {
    dirs: Mutex<ProbeDirs>,
    proc_root: PathBuf,
}

impl ProbeRequests {
    pub fn new(dirs: ProbeDirs, proc_root: PathBuf) -> Self {
        ProbeRequests {
            dirs: Mutex::new(dirs),
            proc_root,
        }
    }

    /// The directory holding pid's probe file, once the process is known to run.
    fn dir_of(&self, pid: u32) -> Result<PathBuf, String> {
        if !self.proc_root.join(pid.to_string()).exists() {
            return Err(format!("pid {pid} has exited"));
        }
        let mut dirs = self
            .dirs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        dirs.dirs()
            .iter()
            .find(|d| {
                fs::symlink_metadata(d.join(format!("{pid}.json"))).is_ok_and(|m| m.is_file())
            })
            .cloned()
            .ok_or_else(|| {
                format!(
                    "pid {pid} has no probe (start it under `gpumon run` or `gpumon probe env`)"
                )
            })
    }

    /// The checked probe file of pid, in `dir`.
    fn report(dir: &Path, pid: u32) -> Result<super::ProbeReport, String> {
        let mut bytes = Vec::new();
        fs::OpenOptions::new()
            .read(true)
            .custom_flags(OFlags::NOFOLLOW.bits() as i32)
            .open(dir.join(format!("{pid}.json")))
            .and_then(|f| f.take(file::MAX_BYTES + 1).read_to_end(&mut bytes))
            .map_err(|e| format!("the probe file of pid {pid} cannot be read ({e})"))?;
        file::parse(&bytes, pid).map_err(|e| format!("the probe file of pid {pid}: {e}"))
    }
}

/// The directory opened without following a link, and its owner.
fn open_dir(dir: &Path) -> Result<(OwnedFd, u32, u32), String> {
    let fd = openat(
        rustix::fs::CWD,
        dir,
        OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::RDONLY,
        Mode::empty(),
    )
    .map_err(|e| format!("{}: {e}", dir.display()))?;
    let st = fstat(&fd).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok((fd, st.st_uid, st.st_gid))
}

impl Requests for ProbeRequests {
    fn send(&self, ask: &Ask) -> Result<(), String> {
        let pid = ask.pid;
        let dir = self.dir_of(pid)?;
        let report = Self::report(&dir, pid)?;
        if ask
            .start_time
            .is_some_and(|s| s.abs_diff(report.start_time) > 1)
        {
            return Err(format!(
                "pid {pid} has exited (its probe file is another process's)"
            ));
        }
        if let Some(why) = &report.stopped {
            return Err(format!("the probe of pid {pid} stopped: {why}"));
        }
        let (dirfd, uid, gid) = open_dir(&dir)?;
        let name = format!("{pid}.request");
        let tmp = format!(".{pid}.request.tmp");
        let fail =
            |e: rustix::io::Errno| format!("cannot write {}: {e}", dir.join(&name).display());
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mode = Mode::from_raw_mode(0o600);
        let fd = match openat(&dirfd, &tmp, flags, mode) {
            Err(rustix::io::Errno::EXIST) => {
                // Left by a gpumon that died mid-write.
                unlinkat(&dirfd, &tmp, AtFlags::empty()).map_err(fail)?;
                openat(&dirfd, &tmp, flags, mode).map_err(fail)?
            }
            other => other.map_err(fail)?,
        };
        if geteuid().is_root() {
            let owner = rustix::fs::Uid::from_raw(uid);
            let group = rustix::fs::Gid::from_raw(gid);
            fchown(&fd, Some(owner), Some(group)).map_err(fail)?;
        }
        let mut file = fs::File::from(fd);
        let written = file
            .write_all(ask.line().as_bytes())
            .and_then(|()| file.sync_all());
        if let Err(e) = written {
            let _ = unlinkat(&dirfd, &tmp, AtFlags::empty());
            return Err(format!("cannot write {}: {e}", dir.join(&name).display()));
        }
        renameat(&dirfd, &tmp, &dirfd, &name).map_err(|e| {
            let _ = unlinkat(&dirfd, &tmp, AtFlags::empty());
            fail(e)
        })
    }

    fn answer(&self, pid: u32) -> Result<Option<ProbeAnswer>, String> {
        let dir = self.dir_of(pid)?;
        Ok(Self::report(&dir, pid)?.answer)
    }

    fn take_export(&self, pid: u32, name: &str, to: &Path) -> Result<PathBuf, String> {
        if !export_name(name, pid) {
            return Err(format!(
                "the probe named an export {name:?}: not an export file"
            ));
        }
        let dir = self.dir_of(pid)?;
        let (dirfd, uid, _) = open_dir(&dir)?;
        let from = openat(
            &dirfd,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| format!("{}: {e}", dir.join(name).display()))?;
        let st = fstat(&from).map_err(|e| e.to_string())?;
        if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile
            || st.st_uid != uid
        {
            return Err(format!(
                "{} is not a regular file of the directory's owner: not taken",
                dir.join(name).display()
            ));
        }
        let to = copy_private(fs::File::from(from), to)?;
        let _ = unlinkat(&dirfd, name, AtFlags::empty());
        Ok(to)
    }
}

/// `<pid>.export.<digits>.pickle` or `.pb.gz`, and nothing else (never a path).
pub fn export_name(name: &str, pid: u32) -> bool {
    let Some(rest) = name.strip_prefix(&format!("{pid}.export.")) else {
        return false;
    };
    let id = rest
        .strip_suffix(".pickle")
        .or_else(|| rest.strip_suffix(".pb.gz"));
    id.is_some_and(|id| !id.is_empty() && id.len() <= 20 && id.bytes().all(|b| b.is_ascii_digit()))
}

/// Copies `from` to `to` through a temporary file beside it (0600, not through a link), then
/// renames it into place.
fn copy_private(mut from: fs::File, to: &Path) -> Result<PathBuf, String> {
    let name = to
        .file_name()
        .ok_or_else(|| format!("{}: not a file name", to.display()))?;
    let tmp = to.with_file_name(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let fail = |e: std::io::Error| format!("{}: {e}", to.display());
    let mut out = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(OFlags::NOFOLLOW.bits() as i32)
        .open(&tmp)
        .map_err(fail)?;
    let copied = std::io::copy(&mut from, &mut out).and_then(|_| out.sync_all());
    if let Err(e) = copied.and_then(|()| fs::rename(&tmp, to)) {
        let _ = fs::remove_file(&tmp);
        return Err(fail(e));
    }
    debug_assert!(fs::metadata(to).is_ok_and(|m| m.mode() & 0o077 == 0));
    Ok(to.to_path_buf())
}

#[cfg(test)]
mod tests;
