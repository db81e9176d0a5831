//! The host side of the live source: what /proc says about the PIDs NVML lists (via sysinfo).
//!
//! Only the PIDs asked about are read (never a walk of /proc, never their tasks). Facts that do
//! not change during a process's life (user, command, framework, settings, container) are read once per
//! process, identified by (pid, start time); memory is read every tick.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};

use sysinfo::{Pid, Process, ProcessRefreshKind, ProcessesToUpdate, System, UpdateKind, Users};

use super::{
    Framework, HostProcess, HostReader, Reading, SourceError, container, environ, framework,
};
use crate::sample::Placement;

/// What is read once per process lifetime.
struct Lifetime {
    start_time: u64,
    user: Reading<String>,
    command: Reading<String>,
    framework: Reading<Framework>,
    settings: Reading<BTreeMap<String, String>>,
    container: Reading<Placement>,
}

/// Reads /proc for the PIDs it is given.
pub struct ProcReader {
    sys: System,
    /// The PIDs of this lookup, sorted (kept to reuse the allocation).
    pids: Vec<Pid>,
    lifetimes: HashMap<u32, Lifetime>,
    user_names: HashMap<u32, String>,
}

impl ProcReader {
    /// Fails only where sysinfo cannot read processes at all (no /proc).
    pub fn new() -> Result<Self, SourceError> {
        let sys = System::new()
            .map_err(|e| SourceError::Unavailable(format!("cannot read processes: {e}")))?;
        Ok(ProcReader {
            sys,
            pids: Vec::new(),
            lifetimes: HashMap::new(),
            user_names: HashMap::new(),
        })
    }

    /// sysinfo keeps every process it has read; start afresh once it holds PIDs no longer
    /// asked about, so a long run does not accumulate them.
    fn forget_stale(&mut self) {
        let stale = self
            .sys
            .processes()
            .keys()
            .any(|p| self.pids.binary_search(p).is_err());
        if stale && let Ok(fresh) = System::new() {
            self.sys = fresh;
        }
    }
}

/// The user name of `uid`, looked up once (the uid itself when /etc/passwd lacks it).
fn user_name(names: &mut HashMap<u32, String>, uid: u32) -> String {
    names
        .entry(uid)
        .or_insert_with(|| {
            Users::new_with_refreshed_list()
                .ok()
                .and_then(|users| {
                    users
                        .iter()
                        .find(|u| **u.id() == uid)
                        .map(|u| u.name().to_string())
                })
                .unwrap_or_else(|| uid.to_string())
        })
        .clone()
}

/// Reads what does not change during the life of process `pid`.
fn lifetime(pid: u32, p: &Process, names: &mut HashMap<u32, String>) -> Lifetime {
    let user = match p.user_id() {
        Some(uid) => Reading::Value(user_name(names, **uid)),
        None => Reading::na("owner not readable"),
    };
    Lifetime {
        start_time: p.start_time(),
        user,
        command: Reading::Value(command(p)),
        framework: framework::read(pid),
        settings: environ::read(pid),
        container: container::read(std::path::Path::new("/proc"), pid).map(Placement::from),
    }
}

/// The command line, arguments joined by spaces; the process name when it has none.
fn command(p: &Process) -> String {
    let args: Vec<_> = p.cmd().iter().map(|a| a.to_string_lossy()).collect();
    if args.iter().all(|a| a.is_empty()) {
        p.name().to_string_lossy().into_owned()
    } else {
        args.join(" ")
    }
}

impl HostReader for ProcReader {
    fn host(&mut self) -> (String, Option<String>) {
        let host = System::host_name().unwrap_or_else(|_| "unknown".to_string());
        (host, System::kernel_version().ok())
    }

    fn lookup(&mut self, pids: &[u32]) -> HashMap<u32, HostProcess> {
        self.pids.clear();
        self.pids.extend(pids.iter().map(|&p| Pid::from_u32(p)));
        self.pids.sort_unstable();
        self.pids.dedup();
        self.forget_stale();
        let refresh = ProcessRefreshKind::nothing()
            .with_memory()
            .without_tasks()
            .with_cmd(UpdateKind::OnlyIfNotSet)
            .with_user(UpdateKind::OnlyIfNotSet);
        self.sys
            .refresh_processes_specifics(ProcessesToUpdate::Some(&self.pids), true, refresh);
        let ProcReader {
            sys,
            pids,
            lifetimes,
            user_names,
        } = self;
        let mut found = HashMap::with_capacity(pids.len());
        for pid in pids.iter() {
            let Some(p) = sys.process(*pid) else { continue };
            let n = pid.as_u32();
            let life = match lifetimes.entry(n) {
                Entry::Occupied(mut e) => {
                    if e.get().start_time != p.start_time() {
                        e.insert(lifetime(n, p, user_names));
                    }
                    e.into_mut()
                }
                Entry::Vacant(e) => e.insert(lifetime(n, p, user_names)),
            };
            let host = HostProcess {
                start_time: Reading::Value(life.start_time),
                user: life.user.clone(),
                command: life.command.clone(),
                vms: Reading::Value(p.virtual_memory()),
                rss: Reading::Value(p.memory()),
                framework: life.framework.clone(),
                settings: life.settings.clone(),
                container: life.container.clone(),
            };
            found.insert(n, host);
        }
        lifetimes.retain(|pid, _| found.contains_key(pid));
        found
    }
}

#[cfg(test)]
mod tests;
