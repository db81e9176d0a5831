//! Following logs for allocation failures: `--log` files and GPU processes' own output files.
//!
//! Only paths the user gave, and files a GPU process's own stdout/stderr (`/proc/PID/fd/1`, `/2`)
//! are, are ever opened. Memory is bounded: lines are capped (`oom::MAX_LINE`). A poll reads at
//! most [`MAX_FILE_BYTES`] of a log it has caught up with and [`MAX_POLL_BYTES`] in all; a log
//! left behind (its writer wrote more than that between polls) is read faster, up to
//! [`MAX_BEHIND_BYTES`] a poll, and every poll stops reading after [`POLL_MS`], so a tick stays
//! short whatever the logs hold. Each failure is timed by its line (`when.rs`): the time the line
//! gives where it can be believed, else when the line was first seen on disk; one read late says
//! so (`Failure::timing`), and the logs left behind are named with their backlog ([`LogWatch::behind`]).

mod follow;
pub mod lines;
mod when;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::oom::Parsed;
use crate::oom::failure::{Failure, TimeFrom, Timing};
use crate::sample::{LogBehind, Reading};
use follow::{Budget, Follower};

/// Bytes read from all logs together in one poll while none is behind.
pub const MAX_POLL_BYTES: usize = 8 << 20;
/// Bytes read from one log in one poll while it is not behind.
pub const MAX_FILE_BYTES: usize = 4 << 20;
/// Bytes read from a log that was left behind, and from all logs together while one is, in one
/// poll (about 0.4 s of reading at the 170 MB/s a release build parses a training log on two
/// shared cores; [`POLL_MS`] stops it sooner).
pub const MAX_BEHIND_BYTES: usize = 64 << 20;
/// How long one poll reads logs at most (checked every 64 KiB): a backlog is read at about
/// 40 MB a poll on two shared cores, where 4 MiB was the most before (300 MB: 8 polls, not 72).
pub const POLL_MS: u64 = 250;
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
    /// Polls so far: the log read first goes round, so that no backlog starves another log.
    turn: usize,
    /// How long a poll reads ([`POLL_MS`]; tests that count bytes lift it).
    poll_ms: u64,
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
            turn: 0,
            poll_ms: POLL_MS,
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
        let behind = self.files.iter().any(|f| f.follower.behind() > 0);
        let mut left = if behind {
            MAX_BEHIND_BYTES
        } else {
            MAX_POLL_BYTES
        };
        let until = std::time::Instant::now() + std::time::Duration::from_millis(self.poll_ms);
        let n = self.files.len();
        let first = self.turn % n.max(1);
        self.turn = self.turn.wrapping_add(1);
        // Read in turn, told in the files' order.
        let mut each: Vec<Vec<Failure>> = (0..n).map(|_| Vec::new()).collect();
        let mut found = Vec::new();
        for i in (first..n).chain(0..first) {
            let f = &mut self.files[i];
            let mine = match f.follower.behind() {
                0 => MAX_FILE_BYTES,
                _ => MAX_BEHIND_BYTES,
            };
            let mut budget = Budget {
                bytes: mine.min(left),
                until,
            };
            let before = budget.bytes;
            f.follower.poll(&mut budget, at_ms, &mut found);
            left -= before - budget.bytes;
            let pid = owner(&f.pids);
            each[i].extend(
                found
                    .drain(..)
                    .map(|p| timed(p, at_ms, &mut f.follower, pid)),
            );
        }
        let mut failures: Vec<Failure> = each.into_iter().flatten().collect();
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
                    .map(|p| timed(p, at_ms, &mut f.follower, pid)),
            );
        }
        failures
    }

    /// The logs not read to their end by the last poll, with their backlog.
    pub fn behind(&self) -> Vec<LogBehind> {
        self.files
            .iter()
            .filter(|f| f.follower.behind() > 0)
            .map(|f| LogBehind {
                log: f.follower.name.clone(),
                bytes: f.follower.behind(),
                since_ms: f.follower.behind_since(),
            })
            .collect()
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

/// The failure `p` read from `f` at `read_ms`, timed by its line (`when.rs`): the time the line
/// gives where it falls within when the line reached the disk, else the first poll that found it
/// there; `timing` says which when that is not `read_ms`, and how far behind the log the line
/// was read.
fn timed(p: Parsed, read_ms: u64, f: &mut Follower, pid: Option<u32>) -> Failure {
    let by = p.seen.by_ms.unwrap_or(read_ms).min(read_ms);
    let behind_bytes = p.seen.behind;
    let own = p
        .written
        .as_ref()
        .and_then(|w| when::resolve(w, p.seen.after_ms, by, f.marks.zone));
    let (at_ms, from) = match own {
        Some((t, zone)) => {
            f.marks.zone = zone.or(f.marks.zone);
            (t, Some(TimeFrom::Line))
        }
        None if by < read_ms => (by, Some(TimeFrom::OnDisk)),
        None => (read_ms, None),
    };
    let mut failure = p.into_failure(at_ms, &f.name, pid);
    failure.timing = from.map(|from| Timing {
        read_ms,
        from,
        behind_bytes,
    });
    failure
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
