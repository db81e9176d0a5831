//! The real [`PoolReader`]: scans probe directories for `<pid>.json` files, checks that each is a
//! regular file of sane size owned by the user its process runs as, parses it, and removes the
//! files of processes that have ended (only its own user's: it cleans up what it made).

use std::collections::HashSet;
use std::fs;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::file::{self, MAX_BYTES};
use super::{PoolReader, ProbeScan};

/// How often the list of directories is looked for again (new users' directories appear).
const RELIST_EVERY: Duration = Duration::from_secs(10);
/// Files looked at per scan, at most.
const MAX_FILES: usize = 4096;
/// Notices remembered (each said once); past this the memory starts again.
const MAX_SAID: usize = 4096;

/// Where the probe directories are: a fixed list, and for root also every user's.
pub struct ProbeDirs {
    own: Vec<PathBuf>,
    /// Whether to look for other users' directories (`/run/user/*/gpumon/probe`,
    /// `/tmp/gpumon-*/probe`); root only.
    all_users: bool,
    proc_root: PathBuf,
    my_uid: u32,
    dirs: Vec<PathBuf>,
    listed_at: Option<Instant>,
    said: HashSet<String>,
}

impl ProbeDirs {
    pub fn new(own: Vec<PathBuf>, all_users: bool, my_uid: u32) -> Self {
        ProbeDirs {
            own,
            all_users,
            proc_root: PathBuf::from("/proc"),
            my_uid,
            dirs: Vec::new(),
            listed_at: None,
            said: HashSet::new(),
        }
    }

    /// Reads processes' owners from another /proc (tests).
    pub fn with_proc_root(mut self, root: PathBuf) -> Self {
        self.proc_root = root;
        self
    }

    fn relist(&mut self) {
        if self.listed_at.is_some_and(|t| t.elapsed() < RELIST_EVERY) {
            return;
        }
        self.listed_at = Some(Instant::now());
        let mut dirs = self.own.clone();
        if self.all_users {
            dirs.extend(children(Path::new("/run/user")).map(|d| d.join("gpumon/probe")));
            dirs.extend(
                children(Path::new("/tmp"))
                    .filter(|d| {
                        d.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with("gpumon-"))
                    })
                    .map(|d| d.join("probe")),
            );
        }
        dirs.sort();
        dirs.dedup();
        dirs.retain(|d| d.is_dir());
        self.dirs = dirs;
    }

    fn say(&mut self, scan: &mut ProbeScan, path: &Path, reason: &str) {
        let text = format!("probe file {} ignored: {reason}", path.display());
        if self.said.len() >= MAX_SAID {
            self.said.clear();
        }
        if self.said.insert(text.clone()) {
            scan.notices.push(text);
        }
    }

    /// The real uid of a running process; `None` when it has ended.
    fn owner_of(&self, pid: u32) -> Option<u32> {
        let status =
            fs::read_to_string(self.proc_root.join(pid.to_string()).join("status")).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|u| u.parse().ok())
    }

    /// A temporary file left by a process killed mid-write: removed once the process has ended,
    /// if it is this user's.
    fn clean_temp(&self, path: &Path, pid: u32) {
        let ours = fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.uid() == self.my_uid);
        if ours && self.owner_of(pid).is_none() {
            let _ = fs::remove_file(path);
        }
    }

    fn look_at(&mut self, path: &Path, pid: u32, scan: &mut ProbeScan) {
        let Ok(meta) = fs::symlink_metadata(path) else {
            return; // Replaced or removed between listing and reading: next scan.
        };
        if meta.file_type().is_symlink() {
            return self.say(scan, path, "it is a symbolic link");
        }
        if !meta.is_file() {
            return self.say(scan, path, "it is not a regular file");
        }
        let Some(owner) = self.owner_of(pid) else {
            // Its process has ended: remove the file if it is ours, else leave it alone.
            if meta.uid() == self.my_uid {
                let _ = fs::remove_file(path);
            }
            return;
        };
        if meta.uid() != owner {
            let reason = format!(
                "owned by uid {}, but pid {pid} runs as uid {owner}",
                meta.uid()
            );
            return self.say(scan, path, &reason);
        }
        if meta.len() > MAX_BYTES {
            let reason = format!("oversized ({} bytes, at most {MAX_BYTES})", meta.len());
            return self.say(scan, path, &reason);
        }
        let mut bytes = Vec::new();
        let read = fs::File::open(path).and_then(|f| f.take(MAX_BYTES + 1).read_to_end(&mut bytes));
        if let Err(e) = read {
            return self.say(scan, path, &format!("cannot be read ({e})"));
        }
        match file::parse(&bytes, pid) {
            Ok(report) => {
                scan.reports.insert(pid, report);
            }
            Err(reason) => self.say(scan, path, &reason),
        }
    }
}

impl PoolReader for ProbeDirs {
    fn scan(&mut self, _now_ms: u64) -> ProbeScan {
        self.relist();
        let mut scan = ProbeScan::default();
        let mut seen = 0usize;
        for dir in self.dirs.clone() {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(name) = name.to_str() else { continue };
                if let Some(pid) = temp_file_pid(name) {
                    self.clean_temp(&entry.path(), pid);
                    continue;
                }
                let Some(pid) = name
                    .strip_suffix(".json")
                    .and_then(|n| n.parse::<u32>().ok())
                else {
                    continue;
                };
                seen += 1;
                if seen > MAX_FILES {
                    return scan;
                }
                self.look_at(&entry.path(), pid, &mut scan);
            }
        }
        scan
    }
}

/// The pid of a temporary file the hook writes (`.<pid>.json.tmp`).
fn temp_file_pid(name: &str) -> Option<u32> {
    name.strip_prefix('.')?
        .strip_suffix(".json.tmp")?
        .parse()
        .ok()
}

fn children(dir: &Path) -> impl Iterator<Item = PathBuf> {
    fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
}
