//! The real [`PoolReader`]: scans probe directories for `<pid>.json` and `<pid>.map.json` files,
//! checks that each is a regular file of sane size owned by the user its process runs as, parses
//! it only when its file changed (its inode, size and modification time: an unchanged file's
//! last report is given again, unread), and removes the files of processes that have ended
//! (only its own user's: it cleans up what it made).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::file::{self, MAX_BYTES};
use super::maps::{MapWatch, Stamp};
use super::{PoolReader, ProbeReport, ProbeScan, map_file};
use crate::clock::tick_times::time;
use crate::sample::PoolMap;

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
    maps: MapWatch,
    /// The owner's uid and the start time of each process whose probe file was last accepted:
    /// its file is read once more after the process has ended, for its end record, only if it
    /// is still that user's and that process's.
    owners: HashMap<u32, (u32, u64)>,
    /// Each process's probe file as last read, and what it said.
    last: HashMap<u32, (Stamp, ProbeReport)>,
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
            maps: MapWatch::default(),
            owners: HashMap::new(),
            last: HashMap::new(),
        }
    }

    /// Reads processes' owners from another /proc (tests).
    pub fn with_proc_root(mut self, root: PathBuf) -> Self {
        self.proc_root = root;
        self
    }

    /// The directories scanned (listed again at most every 10 s).
    pub fn dirs(&mut self) -> &[PathBuf] {
        self.relist();
        &self.dirs
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

    /// Says why `path` (of `pid`) is ignored, once per file, process (its start time, when its
    /// probe file was read) and reason: a map refused for the same fault every 30 s, the fault
    /// at another place in each new file, is one notice; the notice gives the first one's figures.
    fn say(&mut self, scan: &mut ProbeScan, path: &Path, pid: u32, reason: &str) {
        let start = scan.reports.get(&pid).map(|r| r.start_time);
        let key = format!("{}\0{start:?}\0{}", path.display(), without_figures(reason));
        if self.said.len() >= MAX_SAID {
            self.said.clear();
        }
        if self.said.insert(key) {
            scan.notices
                .push(format!("probe file {} ignored: {reason}", path.display()));
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

    /// The file's bytes when it passes the checks every probe file must (regular, not a link,
    /// owned by the user pid runs as, at most `max` bytes); `None` after saying why not, or
    /// when it is gone. A file of an ended process is removed if it is this user's.
    pub(super) fn checked(
        &mut self,
        path: &Path,
        pid: u32,
        max: u64,
        scan: &mut ProbeScan,
    ) -> Option<Vec<u8>> {
        let owner = self.owner_of(pid);
        self.checked_meta(path, pid, owner, max, scan)?;
        self.read(path, pid, max, scan)
    }

    /// The file's metadata when it passes the checks of [`ProbeDirs::checked`], before reading;
    /// `owner` is pid's real uid as [`ProbeDirs::owner_of`] read it this scan (`None`: ended).
    fn checked_meta(
        &mut self,
        path: &Path,
        pid: u32,
        owner: Option<u32>,
        max: u64,
        scan: &mut ProbeScan,
    ) -> Option<fs::Metadata> {
        // Replaced or removed between listing and reading: next scan.
        let meta = fs::symlink_metadata(path).ok()?;
        if meta.file_type().is_symlink() {
            self.say(scan, path, pid, "it is a symbolic link");
            return None;
        }
        if !meta.is_file() {
            self.say(scan, path, pid, "it is not a regular file");
            return None;
        }
        let Some(owner) = owner else {
            // Its process has ended: remove the file if it is ours, else leave it alone; a
            // probe file whose end is still to be read stays for the next scan's look.
            let end_unread = self.owners.contains_key(&pid) && max == MAX_BYTES;
            if meta.uid() == self.my_uid && !end_unread {
                let _ = fs::remove_file(path);
            }
            return None;
        };
        if meta.uid() != owner {
            let reason = format!(
                "owned by uid {}, but pid {pid} runs as uid {owner}",
                meta.uid()
            );
            self.say(scan, path, pid, &reason);
            return None;
        }
        if meta.len() > max {
            let reason = format!("oversized ({} bytes, at most {max})", meta.len());
            self.say(scan, path, pid, &reason);
            return None;
        }
        Some(meta)
    }

    /// At most `max + 1` bytes of `path`, never through a link; `None` after saying why.
    fn read(&mut self, path: &Path, pid: u32, max: u64, scan: &mut ProbeScan) -> Option<Vec<u8>> {
        let mut bytes = Vec::new();
        let read = time("probe.read", || {
            fs::OpenOptions::new()
                .read(true)
                .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
                .open(path)
                .and_then(|f| f.take(max + 1).read_to_end(&mut bytes))
        });
        if let Err(e) = read {
            self.say(scan, path, pid, &format!("cannot be read ({e})"));
            return None;
        }
        Some(bytes)
    }

    fn look_at(
        &mut self,
        path: &Path,
        pid: u32,
        scan: &mut ProbeScan,
        ended: &mut HashMap<u32, ProbeReport>,
    ) {
        // One look at /proc/PID/status a scan: whether pid runs, and as whom.
        let owner = time("probe.owner (/proc/PID/status)", || self.owner_of(pid));
        if owner.is_none() {
            self.look_at_ended(path, pid, ended);
            return;
        }
        let Some(meta) = self.checked_meta(path, pid, owner, MAX_BYTES, scan) else {
            return;
        };
        let stamp = Stamp::of(&meta);
        if let Some((last, report)) = self.last.get(&pid)
            && *last == stamp
        {
            scan.reports.insert(pid, report.clone());
            return;
        }
        let Some(bytes) = self.read(path, pid, MAX_BYTES, scan) else {
            return;
        };
        match time("probe.parse", || file::parse(&bytes, pid)) {
            Ok(report) => {
                self.owners.insert(pid, (meta.uid(), report.start_time));
                self.last.insert(pid, (stamp, report.clone()));
                scan.reports.insert(pid, report);
            }
            Err(reason) => self.say(scan, path, pid, &reason),
        }
    }

    /// The last file of a process that has ended, read once for its end record: only when it
    /// is still a regular file of the user whose file was accepted while the process ran, and
    /// of that process (its start time); then removed if it is this user's. Nothing is said of
    /// a file that fails: its process is gone.
    fn look_at_ended(&mut self, path: &Path, pid: u32, ended: &mut HashMap<u32, ProbeReport>) {
        let Some((uid, start_time)) = self.owners.remove(&pid) else {
            if fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.uid() == self.my_uid) {
                let _ = fs::remove_file(path);
            }
            return;
        };
        let Ok(meta) = fs::symlink_metadata(path) else {
            return;
        };
        if !meta.is_file() || meta.uid() != uid {
            return;
        }
        let mut bytes = Vec::new();
        let read = fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(path)
            .and_then(|f| f.take(MAX_BYTES + 1).read_to_end(&mut bytes));
        if read.is_ok()
            && let Ok(report) = file::parse(&bytes, pid)
            && report.start_time == start_time
        {
            ended.insert(pid, report);
        }
        if uid == self.my_uid {
            let _ = fs::remove_file(path);
        }
    }

    /// A map file, read only when it changed since the last look.
    fn look_at_map(&mut self, path: &Path, pid: u32, scan: &mut ProbeScan) -> Option<PoolMap> {
        let meta = fs::symlink_metadata(path).ok()?;
        if !self.maps.changed(pid, &meta) {
            return None;
        }
        let bytes = self.checked(path, pid, map_file::MAX_BYTES, scan)?;
        map_file::parse(&bytes, pid)
            .inspect_err(|reason| self.say(scan, path, pid, reason))
            .ok()
    }
}

impl PoolReader for ProbeDirs {
    fn scan(&mut self, _now_ms: u64) -> ProbeScan {
        self.relist();
        let mut scan = ProbeScan::default();
        let mut seen = 0usize;
        let mut map_files = Vec::new();
        let mut ended = HashMap::new();
        let mut listed = HashSet::new();
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
                if let Some(pid) = pid_of(name, ".map.json") {
                    map_files.push((entry.path(), pid));
                    continue;
                }
                if let Some(pid) = pid_of(name, ".request") {
                    self.clean_temp(&entry.path(), pid);
                    continue;
                }
                let Some(pid) = pid_of(name, ".json") else {
                    continue;
                };
                seen += 1;
                if seen > MAX_FILES {
                    break;
                }
                listed.insert(pid);
                self.look_at(&entry.path(), pid, &mut scan, &mut ended);
            }
        }
        self.last.retain(|pid, _| scan.reports.contains_key(pid));
        let mut maps = Vec::new();
        let mut paths = HashMap::new();
        for (path, pid) in map_files.into_iter().take(MAX_FILES) {
            paths.insert(pid, path.clone());
            if scan.reports.contains_key(&pid) {
                maps.extend(self.look_at_map(&path, pid, &mut scan));
            } else {
                self.clean_temp(&path, pid);
            }
        }
        let mut refused = Vec::new();
        self.owners.retain(|pid, _| listed.contains(pid));
        scan.news = self
            .maps
            .news(&scan.reports, &ended, maps, &mut |pid, why| {
                refused.push((pid, why));
            });
        for (pid, why) in refused {
            if let Some(path) = paths.get(&pid) {
                self.say(&mut scan, path, pid, &why);
            }
        }
        scan
    }
}

/// A reason without its figures (serde's "at line 1 column 521", a file's size): the same
/// fault in the next file a process writes is the same reason.
fn without_figures(reason: &str) -> String {
    reason.chars().filter(|c| !c.is_ascii_digit()).collect()
}

/// The pid of a temporary file the hook or gpumon writes (`.<pid>.json.tmp`,
/// `.<pid>.map.json.tmp`, `.<pid>.request.tmp`, …).
fn temp_file_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (pid, _) = rest.split_once('.')?;
    pid.parse().ok()
}

/// The pid of `<pid><suffix>`.
fn pid_of(name: &str, suffix: &str) -> Option<u32> {
    let pid = name.strip_suffix(suffix)?;
    (!pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
        .then(|| pid.parse().ok())
        .flatten()
}

fn children(dir: &Path) -> impl Iterator<Item = PathBuf> {
    fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
}
