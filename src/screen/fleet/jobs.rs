//! The fleet's distributed jobs: the ranks of one job id gathered from every host (each host's
//! `Machine::jobs`), so a job of two nodes is one row of the overview: its ranks per host against
//! the world size, its memory, its largest rank and, when one of its hosts raised an alert
//! about the job (`Alert::job`), its root-cause rank. Derived in the fleet's update.

use std::collections::BTreeMap;

use crate::model::{Level, Machine};

/// One job as the fleet sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetJob {
    pub id: String,
    /// The world size its hosts say (the most common; `problems` says when they differ).
    pub world_size: Option<u32>,
    /// The hosts holding its ranks, in the order of the machines.
    pub hosts: Vec<JobHost>,
    /// Running ranks on every host together.
    pub ranks: usize,
    /// Device memory of its running ranks on every host together (known readings).
    pub device: u64,
    pub largest: Option<Largest>,
    pub root_cause: Option<RootCause>,
    /// A rank claimed on more than one host; hosts that disagree on the world size.
    pub problems: Vec<String>,
}

/// A host's share of a job.
#[derive(Debug, Clone, PartialEq)]
pub struct JobHost {
    /// The machine (an index into `State::machines`).
    pub index: usize,
    pub name: String,
    /// Its running ranks of the job.
    pub ranks: usize,
}

/// The running rank holding the most device memory among all the job's hosts.
#[derive(Debug, Clone, PartialEq)]
pub struct Largest {
    pub host: String,
    pub rank: Option<u32>,
    pub pid: u32,
    pub device: u64,
    /// Over the median of the job's other running ranks on every host; `None` with fewer than
    /// two ranks with readings, or a median of 0.
    pub ratio: Option<f64>,
}

/// The rank a host's alert about the job names (the alert's process): the most severe such
/// alert, the earliest of those.
#[derive(Debug, Clone, PartialEq)]
pub struct RootCause {
    pub host: String,
    pub pid: Option<u32>,
    /// Its rank, where the host's job knows the process.
    pub rank: Option<u32>,
    pub level: Level,
    pub class: String,
    pub title: String,
    pub at_ms: u64,
}

/// One running rank with a device-memory reading, for the largest and the median.
struct Sized<'a> {
    host: &'a str,
    pid: u32,
    rank: Option<u32>,
    device: u64,
}

/// The jobs on `machines` (named by `names`, one a machine): those with a root cause first,
/// then those on the most hosts, then by id.
pub fn derive(names: &[String], machines: &[Machine]) -> Vec<FleetJob> {
    let mut by_id: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, m) in machines.iter().enumerate() {
        for j in &m.jobs {
            by_id.entry(j.id.as_str()).or_default().push(i);
        }
    }
    let name = |i: usize| {
        names
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("host {}", i + 1))
    };
    let mut jobs: Vec<FleetJob> = by_id
        .into_iter()
        .map(|(id, hosts)| job(id, &hosts, machines, &name))
        .collect();
    jobs.sort_by(|a, b| {
        (b.root_cause.is_some(), b.hosts.len(), &a.id).cmp(&(
            a.root_cause.is_some(),
            a.hosts.len(),
            &b.id,
        ))
    });
    jobs
}

fn job(
    id: &str,
    hosts: &[usize],
    machines: &[Machine],
    name: &dyn Fn(usize) -> String,
) -> FleetJob {
    let mut out = FleetJob {
        id: id.to_string(),
        world_size: None,
        hosts: Vec::new(),
        ranks: 0,
        device: 0,
        largest: None,
        root_cause: None,
        problems: Vec::new(),
    };
    let names: Vec<String> = hosts.iter().map(|i| name(*i)).collect();
    let mut sizes: BTreeMap<u32, usize> = BTreeMap::new();
    let mut claims: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut sized: Vec<Sized> = Vec::new();
    for (&i, host) in hosts.iter().zip(&names) {
        let m = &machines[i];
        let Some(j) = m.jobs.iter().find(|j| j.id == id) else {
            continue;
        };
        let running: Vec<_> = j.ranks.iter().filter(|r| r.running()).collect();
        out.hosts.push(JobHost {
            index: i,
            name: host.clone(),
            ranks: running.len(),
        });
        out.ranks += running.len();
        out.device = out.device.saturating_add(j.device);
        if let Some(w) = j.world_size {
            *sizes.entry(w).or_default() += 1;
        }
        for r in running {
            if let Some(n) = r.rank {
                claims
                    .entry(n)
                    .or_default()
                    .push(format!("{host} (pid {})", r.pid));
            }
            if let Some(device) = r.device {
                sized.push(Sized {
                    host,
                    pid: r.pid,
                    rank: r.rank,
                    device,
                });
            }
        }
        out.root_cause = worse(out.root_cause.take(), root_cause(id, host, m));
    }
    out.world_size = sizes
        .iter()
        .max_by_key(|(w, n)| (**n, std::cmp::Reverse(**w)))
        .map(|(w, _)| *w);
    if sizes.len() > 1 {
        let said: Vec<String> = sizes.keys().map(u32::to_string).collect();
        out.problems.push(format!(
            "its hosts disagree on the world size ({})",
            said.join(", ")
        ));
    }
    for (n, on) in claims.iter().filter(|(_, on)| on.len() > 1) {
        out.problems
            .push(format!("rank {n} is claimed on {}", on.join(" and ")));
    }
    out.largest = largest(&sized);
    out
}

/// The largest running rank against the median of the others (`model::jobs`' measure).
fn largest(sized: &[Sized]) -> Option<Largest> {
    let top = sized.iter().max_by_key(|s| {
        (
            s.device,
            std::cmp::Reverse(s.rank),
            std::cmp::Reverse(s.pid),
        )
    })?;
    let mut others: Vec<u64> = sized
        .iter()
        .filter(|s| !std::ptr::eq(*s, top))
        .map(|s| s.device)
        .collect();
    let ratio = crate::model::jobs::median(&mut others)
        .filter(|m| *m > 0)
        .map(|m| crate::model::jobs::ratio(top.device, m));
    Some(Largest {
        host: top.host.to_string(),
        rank: top.rank,
        pid: top.pid,
        device: top.device,
        ratio,
    })
}

/// The host's most severe alert about the job (failures, then suspicions), the earliest.
fn root_cause(id: &str, host: &str, m: &Machine) -> Option<RootCause> {
    let a = m
        .alerts
        .iter()
        .filter(|a| a.job.as_deref() == Some(id) && a.level.warns())
        .min_by_key(|a| (std::cmp::Reverse(a.level.severity()), a.at_ms))?;
    let rank = a
        .pid
        .and_then(|pid| m.job_of(pid))
        .filter(|(j, _)| j.id == id)
        .and_then(|(_, r)| r.rank);
    Some(RootCause {
        host: host.to_string(),
        pid: a.pid,
        rank,
        level: a.level,
        class: a.class.clone(),
        title: a.title.clone(),
        at_ms: a.at_ms,
    })
}

/// The more severe of two hosts' root causes, the earlier where equal.
fn worse(a: Option<RootCause>, b: Option<RootCause>) -> Option<RootCause> {
    match (a, b) {
        (Some(a), Some(b)) => {
            let key = |r: &RootCause| (std::cmp::Reverse(r.level.severity()), r.at_ms);
            Some(if key(&b) < key(&a) { b } else { a })
        }
        (a, b) => a.or(b),
    }
}
