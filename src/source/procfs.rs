//! The host side of the live source: what /proc says about the PIDs NVML lists.
//!
//! Only the PIDs asked about are read (never a walk of /proc, never their tasks). Memory and the
//! start time come from /proc/PID/statm and /proc/PID/stat every tick. Facts that rarely change
//! during a process's life (user, command, framework, settings, container) are read when a
//! process (pid, start time) is first seen and again every `period::LIFETIME`. The parsing is in
//! `parse`.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;
use std::time::Duration;

use super::period::{self, Period};
use super::{
    Framework, HostProcess, HostReader, Reading, SourceError, container, environ, framework,
};
use crate::clock::tick_times::time;
use crate::sample::Placement;

mod parse;

/// What is read when a process is first seen, and again once per `refresh`.
struct Lifetime {
    start_time: Option<u64>,
    period: Period,
    user: Reading<String>,
    command: Reading<String>,
    framework: Reading<Framework>,
    settings: Reading<BTreeMap<String, String>>,
    container: Reading<Placement>,
}

/// Reads /proc for the PIDs it is given.
pub struct ProcReader {
    lifetimes: HashMap<u32, Lifetime>,
    /// User names by uid, forgotten every `refresh` (an edited /etc/passwd shows then).
    user_names: HashMap<u32, String>,
    names_period: Period,
    refresh: Duration,
}

impl ProcReader {
    /// Fails only where processes cannot be read at all (no /proc).
    pub fn new() -> Result<Self, SourceError> {
        ProcReader::with_refresh(period::LIFETIME)
    }

    /// Re-reads what rarely changes every `refresh` (tests shorten it).
    pub fn with_refresh(refresh: Duration) -> Result<Self, SourceError> {
        std::fs::read("/proc/self/stat")
            .map_err(|e| SourceError::Unavailable(format!("cannot read processes: {e}")))?;
        Ok(ProcReader {
            lifetimes: HashMap::new(),
            user_names: HashMap::new(),
            names_period: Period::new(refresh),
            refresh,
        })
    }
}

/// `/proc/PID/file`'s bytes; `None` once the process has gone (or the file is not readable).
fn read(pid: u32, file: &str) -> Option<Vec<u8>> {
    std::fs::read(format!("/proc/{pid}/{file}")).ok()
}

/// The boot time in Unix seconds, read once from /proc/stat.
fn boot_time() -> Option<u64> {
    static BTIME: OnceLock<Option<u64>> = OnceLock::new();
    *BTIME.get_or_init(|| parse::btime(&std::fs::read("/proc/stat").ok()?))
}

/// Process start in Unix seconds from /proc/PID/stat's text, as the Python probe computes it:
/// boot time + start ticks / clock ticks per second (whole seconds, rounded down).
fn start_time_of(stat: &[u8]) -> Option<u64> {
    let ticks = parse::stat_start_ticks(stat)? / rustix::param::clock_ticks_per_second().max(1);
    boot_time()?.checked_add(ticks)
}

/// When process `pid` started, in Unix seconds (the same number the samples carry).
pub fn start_time(pid: u32) -> Option<u64> {
    start_time_of(&read(pid, "stat")?)
}

/// The user name of `uid`, looked up once (the uid itself when /etc/passwd lacks it).
fn user_name(names: &mut HashMap<u32, String>, uid: u32) -> String {
    names
        .entry(uid)
        .or_insert_with(|| {
            std::fs::read("/etc/passwd")
                .ok()
                .and_then(|passwd| parse::passwd_name(&passwd, uid))
                .unwrap_or_else(|| uid.to_string())
        })
        .clone()
}

/// Reads what does not change during the life of process `pid`, whose /proc/PID/stat is `stat`
/// and start time `start_time` (read from it).
fn lifetime(
    pid: u32,
    stat: &[u8],
    start_time: Option<u64>,
    names: &mut HashMap<u32, String>,
    period: Period,
) -> Lifetime {
    let user = match time("proc.status", || read(pid, "status"))
        .as_deref()
        .and_then(parse::real_uid)
    {
        Some(uid) => Reading::Value(user_name(names, uid)),
        None => Reading::na("owner not readable"),
    };
    // The command line, arguments joined by spaces; the process name when it has none.
    let command = time("proc.cmdline", || read(pid, "cmdline"))
        .as_deref()
        .and_then(parse::command)
        .or_else(|| parse::stat_comm(stat))
        .unwrap_or_default();
    Lifetime {
        start_time,
        period,
        user,
        command: Reading::Value(command),
        framework: time("proc.maps (framework)", || framework::read(pid)),
        settings: time("proc.environ", || environ::read(pid)),
        container: time("proc.cgroup (container)", || {
            container::read(std::path::Path::new("/proc"), pid)
        })
        .map(Placement::from),
    }
}

impl HostReader for ProcReader {
    fn host(&mut self) -> (String, Option<String>) {
        let uname = rustix::system::uname();
        let text =
            |s: &std::ffi::CStr| Some(s.to_string_lossy().into_owned()).filter(|s| !s.is_empty());
        let host = text(uname.nodename()).unwrap_or_else(|| "unknown".to_string());
        (host, text(uname.release()))
    }

    fn lookup(&mut self, pids: &[u32]) -> HashMap<u32, HostProcess> {
        let page = rustix::param::page_size() as u64;
        let now_ms = crate::clock::unix_ms();
        let ProcReader {
            lifetimes,
            user_names,
            names_period,
            refresh,
        } = self;
        if names_period.due(now_ms) {
            user_names.clear();
        }
        let fresh = || {
            let mut p = Period::new(*refresh);
            p.due(now_ms);
            p
        };
        let mut found = HashMap::with_capacity(pids.len());
        for &pid in pids {
            if found.contains_key(&pid) {
                continue;
            }
            // Either file missing: the process has exited.
            let (Some(stat), Some(statm)) = (
                time("proc.stat", || read(pid, "stat")),
                time("proc.statm", || read(pid, "statm")),
            ) else {
                continue;
            };
            let start_time = start_time_of(&stat);
            let life = match lifetimes.entry(pid) {
                Entry::Occupied(mut e) => {
                    let life = e.get_mut();
                    if life.start_time != start_time || life.period.due(now_ms) {
                        e.insert(lifetime(pid, &stat, start_time, user_names, fresh()));
                    }
                    e.into_mut()
                }
                Entry::Vacant(e) => e.insert(lifetime(pid, &stat, start_time, user_names, fresh())),
            };
            let pages = parse::statm_pages(&statm);
            let bytes = |n: Option<u64>| match n {
                Some(n) => Reading::Value(n.saturating_mul(page)),
                None => Reading::na("memory not readable"),
            };
            let host = HostProcess {
                start_time: life
                    .start_time
                    .map_or_else(|| Reading::na("start time not readable"), Reading::Value),
                user: life.user.clone(),
                command: life.command.clone(),
                vms: bytes(pages.map(|p| p.0)),
                rss: bytes(pages.map(|p| p.1)),
                framework: life.framework.clone(),
                settings: life.settings.clone(),
                container: life.container.clone(),
            };
            found.insert(pid, host);
        }
        lifetimes.retain(|pid, _| found.contains_key(pid));
        found
    }
}

#[cfg(test)]
mod tests;
