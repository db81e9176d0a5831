//! The host side of the live source: what /proc says about the PIDs NVML lists.
//!
//! Only the PIDs asked about are read (never a walk of /proc, never their tasks). Every tick,
//! VMS and RSS from /proc/PID/statm and the start time from /proc/PID/stat, read here (`parse`);
//! `sysinfo` reads the user and command line when they are due, and the host name and kernel;
//! the hand-written readers beside it read what it does not (the framework from /proc/PID/maps, memory settings
//! and launcher variables from /proc/PID/environ, read once, the container from the cgroup and NSpid). Facts that rarely change
//! during a process's life (user, command, framework, settings, container) are read when a
//! process (pid, start time) is first seen and again every `period::LIFETIME`. `start_time(pid)`
//! re-reads one start time (`kill`'s check) with the same formula as sysinfo: boot time from
//! /proc/stat plus start ticks over clock ticks per second.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;
use std::time::Duration;

use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System, UpdateKind, Users};

use super::period::{self, Period};
use super::{
    Framework, HostProcess, HostReader, Reading, SourceError, container, environ, framework,
    launcher, ras,
};
use crate::clock::tick_times::time;
use crate::sample::{Placement, Rank};

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
    rank: Option<Rank>,
    ras: ras::RasAddr,
}

/// Reads /proc for the PIDs it is given.
pub struct ProcReader {
    system: System,
    /// User names by uid, read again every `refresh` (an edited /etc/passwd shows then).
    users: Users,
    users_period: Period,
    lifetimes: HashMap<u32, Lifetime>,
    refresh: Duration,
    /// This host's name, read once (a loopback rendezvous names its host).
    hostname: OnceLock<String>,
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
            system: System::new(),
            users: Users::new(),
            users_period: Period::new(refresh),
            lifetimes: HashMap::new(),
            refresh,
            hostname: OnceLock::new(),
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

/// When process `pid` started, in Unix seconds (the same number the samples carry): the boot
/// time plus start ticks over clock ticks per second (whole seconds, rounded down), as sysinfo
/// and the Python probe compute it.
pub fn start_time(pid: u32) -> Option<u64> {
    let ticks = parse::stat_start_ticks(&read(pid, "stat")?)?
        / rustix::param::clock_ticks_per_second().max(1);
    boot_time()?.checked_add(ticks)
}

/// This host's name as sysinfo reads it; "unknown" when it has none.
fn host_name() -> String {
    System::host_name()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

/// Reads what rarely changes about process `pid` (sysinfo's `process`, refreshed with its
/// command line and user just before). `last` is what was read of the same process (pid and
/// start time) before (`framework::again` says what of it is kept).
fn lifetime(
    pid: u32,
    process: &sysinfo::Process,
    start_time: Option<u64>,
    users: &Users,
    period: Period,
    host: &str,
    last: Option<&Lifetime>,
) -> Lifetime {
    let user = match process.user_id() {
        Some(uid) => Reading::Value(
            users
                .get_user_by_id(uid)
                .map_or_else(|| uid.to_string(), |u| u.name().to_string()),
        ),
        None => Reading::na("owner not readable"),
    };
    // The command line, arguments joined by spaces; the process name when it has none.
    let args: Vec<_> = process.cmd().iter().map(|a| a.to_string_lossy()).collect();
    let command = if args.is_empty() {
        process.name().to_string_lossy().into_owned()
    } else {
        args.join(" ")
    };
    let environ = time("proc.environ", || environ::read(pid));
    let rank = environ.value().and_then(|e| {
        launcher::rank(&launcher::Launch {
            vars: &e.launch,
            args: &args.iter().map(|a| a.to_string()).collect::<Vec<_>>(),
            host,
            parent: process.parent().map(Pid::as_u32),
        })
    });
    Lifetime {
        start_time,
        period,
        user,
        command: Reading::Value(command),
        framework: framework::again(last.map(|l| &l.framework), || {
            time("proc.maps (framework)", || framework::read(pid))
        }),
        ras: environ
            .value()
            .map_or(ras::RasAddr::At(ras::DEFAULT_ADDR), |e| ras::addr(&e.ras)),
        settings: environ.map(|e| e.settings),
        rank,
        container: time("proc.cgroup (container)", || {
            container::read(std::path::Path::new("/proc"), pid)
        })
        .map(Placement::from),
    }
}

impl HostReader for ProcReader {
    fn host(&mut self) -> (String, Option<String>) {
        let host = self.hostname.get_or_init(host_name).clone();
        (host, System::kernel_version().filter(|k| !k.is_empty()))
    }

    fn lookup(&mut self, pids: &[u32]) -> HashMap<u32, HostProcess> {
        let now_ms = crate::clock::unix_ms();
        let ProcReader {
            system,
            users,
            users_period,
            lifetimes,
            refresh,
            hostname,
        } = self;
        let host = hostname.get_or_init(host_name);
        // Each PID once: sysinfo drops a process listed twice as not updated the second time.
        let mut wanted: Vec<Pid> = pids.iter().map(|&p| Pid::from_u32(p)).collect();
        wanted.sort_unstable();
        wanted.dedup();
        // Memory and start time every tick, read here: /proc/PID/statm and /proc/PID/stat (the
        // start time finds a PID reused by another process). sysinfo's refresh would also read
        // /proc/PID/status, the dearest of the three to make, for nothing shown. A process that
        // has neither has exited.
        let page = rustix::param::page_size() as u64;
        let fast: HashMap<u32, (Option<u64>, u64, u64)> = time("proc.statm+stat (memory)", || {
            wanted
                .iter()
                .filter_map(|pid| {
                    let pid = pid.as_u32();
                    let (size, resident) = parse::statm_pages(&read(pid, "statm")?)?;
                    let vms = size.saturating_mul(page);
                    Some((pid, (start_time(pid), vms, resident.saturating_mul(page))))
                })
                .collect()
        });
        // Command line and user for the processes seen first, reused, or due again.
        let due: Vec<Pid> = wanted
            .iter()
            .filter(|pid| {
                fast.get(&pid.as_u32()).is_some_and(|(start, _, _)| {
                    lifetimes
                        .get(&pid.as_u32())
                        .is_none_or(|l| l.start_time != *start || l.period.is_due(now_ms))
                })
            })
            .copied()
            .collect();
        // sysinfo forgets the processes of ours that have exited.
        let gone: Vec<Pid> = lifetimes
            .keys()
            .filter(|pid| !fast.contains_key(pid))
            .map(|&pid| Pid::from_u32(pid))
            .collect();
        if !gone.is_empty() {
            let nothing = ProcessRefreshKind::nothing().without_tasks();
            system.refresh_processes_specifics(ProcessesToUpdate::Some(&gone), true, nothing);
        }
        if !due.is_empty() {
            if users_period.due(now_ms) {
                time("sysinfo.users", || users.refresh());
            }
            time("sysinfo.refresh (command, user)", || {
                let facts = ProcessRefreshKind::nothing()
                    .without_tasks()
                    .with_cmd(UpdateKind::Always)
                    .with_user(UpdateKind::Always);
                system.refresh_processes_specifics(ProcessesToUpdate::Some(&due), true, facts)
            });
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
            // Gone from /proc: the process has exited.
            let Some(&(start_time, vms, rss)) = fast.get(&pid) else {
                continue;
            };
            let is_due = due.contains(&Pid::from_u32(pid));
            let process = system.process(Pid::from_u32(pid));
            let life = match lifetimes.entry(pid) {
                Entry::Occupied(e) if !is_due => e.into_mut(),
                entry => {
                    // Exited between its statm and sysinfo's read.
                    let Some(process) = process else { continue };
                    let last = match &entry {
                        Entry::Occupied(e) if e.get().start_time == start_time => Some(e.get()),
                        _ => None,
                    };
                    let life = lifetime(pid, process, start_time, users, fresh(), host, last);
                    match entry {
                        Entry::Occupied(mut e) => {
                            e.insert(life);
                            e.into_mut()
                        }
                        Entry::Vacant(e) => e.insert(life),
                    }
                }
            };
            let host = HostProcess {
                start_time: life
                    .start_time
                    .map_or_else(|| Reading::na("start time not readable"), Reading::Value),
                user: life.user.clone(),
                command: life.command.clone(),
                vms: Reading::Value(vms),
                rss: Reading::Value(rss),
                framework: life.framework.clone(),
                settings: life.settings.clone(),
                container: life.container.clone(),
                rank: life.rank.clone(),
                ras: life.ras,
            };
            found.insert(pid, host);
        }
        lifetimes.retain(|pid, _| found.contains_key(pid));
        found
    }
}

#[cfg(test)]
mod tests;
