//! Following logs for allocation failures: `--log` files and GPU processes' own output files.
//!
//! Only paths the user gave, and files a GPU process's own stdout/stderr (`/proc/PID/fd/1`, `/2`)
//! are, are ever opened. Memory is bounded: lines are capped (`oom::MAX_LINE`) and each poll reads
//! at most [`MAX_POLL_BYTES`].

mod follow;
pub mod lines;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::oom::failure::Failure;
use crate::sample::Reading;
use follow::Follower;

/// Bytes read from all logs together in one poll.
pub const MAX_POLL_BYTES: usize = 8 << 20;
/// Bytes read from one log in one poll.
pub const MAX_FILE_BYTES: usize = 4 << 20;
/// Process output files followed at most.
pub const MAX_FOLLOWED: usize = 256;
/// How long a process's output file is still read after the last process writing it exited:
/// torchrun's agent writes its summary of the failure after its workers died.
pub const LINGER_MS: u64 = 10_000;
/// Writers remembered for one file.
const MAX_WRITERS: usize = 1024;

/// Whether a GPU process's output can be followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogStatus {
    /// Its stdout/stderr is a regular file, followed from where it was when the process was found.
    Following(Vec<String>),
    /// Neither is a regular file (a pipe or a terminal cannot be re-read): what they are.
    NotAFile(String),
    /// "log not readable": its fds could not be read (another user's process), and why.
    NotReadable(String),
}

impl LogStatus {
    /// The status as a sample carries it: the files followed, or why none is.
    pub fn reading(&self) -> Reading<Vec<String>> {
        match self {
            LogStatus::Following(files) => Reading::Value(files.clone()),
            LogStatus::NotAFile(what) => Reading::na(format!("not a file ({what})")),
            LogStatus::NotReadable(why) => Reading::na(format!("not readable ({why})")),
        }
    }
}

/// What an fd that is not a regular file is, in words.
fn describe(target: &Path) -> String {
    let t = target.display().to_string();
    if t.starts_with("pipe:") {
        "a pipe".into()
    } else if t.starts_with("socket:") {
        "a socket".into()
    } else if t.starts_with("/dev/pts/") || t.starts_with("/dev/tty") || t == "/dev/console" {
        "a terminal".into()
    } else {
        t
    }
}

struct Followed {
    follower: Follower,
    /// Every process seen writing it (stdout/stderr) since it was followed: a log shared by
    /// several processes stays theirs, not the last one's, as they exit.
    pids: BTreeSet<u32>,
    /// Since when none of them runs (the file is read for `LINGER_MS` more).
    gone_ms: Option<u64>,
    explicit: bool,
}

/// The logs being followed.
pub struct LogWatch {
    files: Vec<Followed>,
    status: BTreeMap<u32, LogStatus>,
    proc_root: PathBuf,
}

impl LogWatch {
    /// Follows `paths` (`--log`, repeatable) like `tail -F`, from their current end.
    pub fn new(paths: &[PathBuf]) -> LogWatch {
        LogWatch::with_proc(paths, PathBuf::from("/proc"))
    }

    fn with_proc(paths: &[PathBuf], proc_root: PathBuf) -> LogWatch {
        LogWatch {
            files: paths
                .iter()
                .map(|p| Followed {
                    follower: Follower::by_path(p.clone()),
                    pids: BTreeSet::new(),
                    gone_ms: None,
                    explicit: true,
                })
                .collect(),
            status: BTreeMap::new(),
            proc_root,
        }
    }

    /// Whether a GPU process's own output is followed; `None` before it was seen.
    pub fn status(&self, pid: u32) -> Option<&LogStatus> {
        self.status.get(&pid)
    }

    /// New failures since the last poll; `pids` are the GPU processes seen this tick.
    pub fn poll(&mut self, at_ms: u64, pids: &[u32]) -> Vec<Failure> {
        for &pid in pids {
            if !self.status.contains_key(&pid) {
                let s = self.discover(pid);
                self.status.insert(pid, s);
            }
        }
        let mut budget = MAX_POLL_BYTES;
        let mut failures = Vec::new();
        let mut found = Vec::new();
        for f in &mut self.files {
            let mut mine = MAX_FILE_BYTES.min(budget);
            let before = mine;
            f.follower.poll(&mut mine, &mut found);
            budget -= before - mine;
            let pid = owner(&f.pids);
            failures.extend(
                found
                    .drain(..)
                    .map(|p| p.into_failure(at_ms, &f.follower.name, pid)),
            );
        }
        let current: BTreeSet<u32> = pids.iter().copied().collect();
        self.status.retain(|pid, _| current.contains(pid));
        // A file none of whose writers runs any more is read for a while yet (a launcher's last
        // words come after its workers'), then to its end and left.
        for f in self.files.iter_mut().filter(|f| !f.explicit) {
            if f.pids.iter().any(|p| current.contains(p)) {
                f.gone_ms = None;
            } else {
                f.gone_ms.get_or_insert(at_ms);
            }
        }
        let (done, kept): (Vec<Followed>, Vec<Followed>) =
            std::mem::take(&mut self.files).into_iter().partition(|f| {
                f.gone_ms
                    .is_some_and(|g| at_ms.saturating_sub(g) >= LINGER_MS)
            });
        self.files = kept;
        for mut f in done {
            f.follower.end_of_file(&mut found);
            let pid = owner(&f.pids);
            failures.extend(
                found
                    .drain(..)
                    .map(|p| p.into_failure(at_ms, &f.follower.name, pid)),
            );
        }
        failures
    }

    fn discover(&mut self, pid: u32) -> LogStatus {
        let mut following = Vec::new();
        let mut other = Vec::new();
        for (fd, label) in [(1, "stdout"), (2, "stderr")] {
            let link = self
                .proc_root
                .join(pid.to_string())
                .join("fd")
                .join(fd.to_string());
            match self.follow_fd(pid, &link) {
                Ok(Some(target)) => following.push(target),
                Ok(None) => other.push(format!(
                    "{label} is {}",
                    fs::read_link(&link).map_or_else(|_| "closed".into(), |t| describe(&t))
                )),
                Err(e) if e.kind() == ErrorKind::NotFound => {
                    other.push(format!("{label} is closed"))
                }
                Err(e) if e.kind() == ErrorKind::PermissionDenied => {
                    return LogStatus::NotReadable("permission denied".into());
                }
                Err(e) => return LogStatus::NotReadable(format!("{label}: {e}")),
            }
        }
        following.dedup();
        if following.is_empty() {
            LogStatus::NotAFile(other.join(", "))
        } else {
            LogStatus::Following(following)
        }
    }

    /// Follows the file behind one fd; `Ok(None)` when it is not a regular file.
    fn follow_fd(&mut self, pid: u32, link: &Path) -> std::io::Result<Option<String>> {
        let target = fs::read_link(link)?.display().to_string();
        let meta = fs::metadata(link)?;
        if !meta.is_file() {
            return Ok(None);
        }
        let id = (meta.dev(), meta.ino());
        if let Some(f) = self.files.iter_mut().find(|f| f.follower.id == Some(id)) {
            if f.pids.len() < MAX_WRITERS {
                f.pids.insert(pid);
            }
            f.gone_ms = None;
            // Named as its failures name it, so a process's `log` lists the same file.
            return Ok(Some(f.follower.name.clone()));
        }
        if self.files.len() >= MAX_FOLLOWED {
            return Ok(None);
        }
        let file = File::open(link)?;
        self.files.push(Followed {
            follower: Follower::by_file(target.clone(), file),
            pids: BTreeSet::from([pid]),
            gone_ms: None,
            explicit: false,
        });
        Ok(Some(target))
    }
}

impl Default for LogWatch {
    fn default() -> Self {
        LogWatch::new(&[])
    }
}

/// The process a log belongs to, when only one was seen writing it.
fn owner(pids: &BTreeSet<u32>) -> Option<u32> {
    let mut it = pids.iter();
    match (it.next(), it.next()) {
        (Some(p), None) => Some(*p),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
