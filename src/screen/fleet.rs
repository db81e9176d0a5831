//! Many machines on one screen: the hosts' names, the fleet overview (one summary row per host,
//! derived in updates, sorted by worst alert, memory used or name: `o` in the overview; the
//! distributed jobs across hosts, `jobs.rs`), which host is in view, and what a remote host's
//! poller reports.

use std::cmp::Reverse;

use crate::input::Action;
use crate::model::{Level, Machine, Segments, SourceState};
use crate::screen::{Command, State};

mod jobs;
pub use jobs::{FleetJob, JobHost, Largest, RootCause};

/// What a remote host's poller reports (`Msg::Remote`).
#[derive(Debug, Clone)]
pub enum Remote {
    /// A new reading of the host: its whole machine, which replaces the one shown.
    Machine(Box<Machine>),
    /// The host could not be read at `at_ms`; why, as `"<what>: <detail>"`.
    Failed { at_ms: u64, reason: String },
    /// A source that finds its hosts itself (Prometheus): the machines from this index on,
    /// with their names, replace those shown.
    Hosts(Vec<(String, Machine)>),
}

/// The fleet: present when there is more than one machine (or a Prometheus source).
#[derive(Debug, Clone, Default)]
pub struct Fleet {
    /// One name per machine of `State::machines`.
    pub names: Vec<String>,
    /// The overview is shown, rather than one host's GPUs and processes.
    pub overview: bool,
    /// Derived: one summary per machine, in `sort` order.
    pub rows: Vec<HostRow>,
    /// Derived: the distributed jobs of every host, each job id once across hosts.
    pub jobs: Vec<FleetJob>,
    pub sort: FleetSort,
}

/// The overview's order (`o` cycles it there).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FleetSort {
    /// Hosts that cannot be read, then by their worst alert (failures first), then by name.
    #[default]
    Alert,
    /// The largest share of GPU memory used first.
    Used,
    Name,
}

impl FleetSort {
    pub fn next(self) -> Self {
        match self {
            FleetSort::Alert => FleetSort::Used,
            FleetSort::Used => FleetSort::Name,
            FleetSort::Name => FleetSort::Alert,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            FleetSort::Alert => "worst alert",
            FleetSort::Used => "memory used",
            FleetSort::Name => "name",
        }
    }
}

/// A host's worst alert (by severity, then the newest), and how many other conditions it has.
#[derive(Debug, Clone, PartialEq)]
pub struct Worst {
    pub level: Level,
    pub class: String,
    pub title: String,
    pub pid: Option<u32>,
    pub others: usize,
}

/// Where a host's readings stand, for its overview row.
#[derive(Debug, Clone, PartialEq)]
pub enum HostState {
    Starting,
    /// Read; the age of its latest sample, if it has one.
    Ok {
        age_ms: Option<u64>,
    },
    /// Its source (or the way to it) fails, since when and why.
    Failing {
        since_ms: u64,
        reason: String,
    },
    Ended,
}

/// One row of the fleet overview.
#[derive(Debug, Clone, PartialEq)]
pub struct HostRow {
    /// The machine it sums up (an index into `State::machines`; `#` shows it plus one).
    pub index: usize,
    pub name: String,
    pub gpus: usize,
    /// Each GPU's memory bar, in index order; `None` where its memory was not read.
    pub bars: Vec<Option<Segments>>,
    /// Sums over the GPUs whose memory was read; `None` when none was.
    pub used: Option<u64>,
    pub total: Option<u64>,
    /// The worst alert: failures before suspicions before information, then the newest;
    /// several alerts of one condition (class, process, GPU) count once.
    pub worst: Option<Worst>,
    pub state: HostState,
    /// Processes the filter matches, while one is set.
    pub matches: Option<usize>,
}

impl State {
    /// Named machines (a fleet); with more than one, the screen opens on the fleet overview.
    pub fn with_hosts(config: crate::model::Config, hosts: Vec<(String, Machine)>) -> Self {
        let (names, machines): (Vec<String>, Vec<Machine>) = hosts.into_iter().unzip();
        let mut state = State::with_machines(config, machines);
        state.screen.fleet = Some(Fleet {
            names,
            overview: state.machines.len() > 1,
            rows: Vec::new(),
            jobs: Vec::new(),
            sort: FleetSort::default(),
        });
        state.derive_fleet();
        state
    }

    /// Whether the fleet overview is on screen.
    pub fn overview(&self) -> bool {
        self.screen.fleet.as_ref().is_some_and(|f| f.overview)
    }

    /// The name of the machine in view, when there is a fleet.
    pub fn host_name(&self) -> Option<&str> {
        let f = self.screen.fleet.as_ref()?;
        f.names.get(self.screen.host).map(String::as_str)
    }

    pub(crate) fn remote(&mut self, n: usize, report: Remote) {
        match report {
            Remote::Machine(machine) => {
                let paused = self.screen.paused;
                if let Some(slot) = self.machines.get_mut(n) {
                    if paused {
                        slot.hold_time(machine.now_ms);
                    } else {
                        *slot = *machine;
                    }
                }
            }
            Remote::Failed { at_ms, reason } => {
                let paused = self.screen.paused;
                if let Some(slot) = self.machines.get_mut(n) {
                    if paused {
                        slot.hold_time(at_ms);
                        slot.fail(at_ms, &reason);
                    } else {
                        slot.update(&crate::model::Event::SourceFailed { at_ms, reason });
                    }
                }
            }
            Remote::Hosts(hosts) if !hosts.is_empty() && n <= self.machines.len() => {
                if self.screen.paused {
                    return;
                }
                let fleet = self.screen.fleet.get_or_insert_with(Fleet::default);
                // A lone placeholder that becomes several hosts opens the overview.
                fleet.overview |= self.machines.len() == 1 && n + hosts.len() > 1;
                fleet.names.truncate(n);
                self.machines.truncate(n);
                for (name, machine) in hosts {
                    fleet.names.push(name);
                    self.machines.push(machine);
                }
                if self.screen.host >= self.machines.len() {
                    self.screen.host = 0;
                }
            }
            Remote::Hosts(_) => {}
        }
        self.derive_rows();
    }

    /// The keys that mean something else with a fleet; `Some` when the action was taken here.
    pub(crate) fn fleet_act(&mut self, a: Action) -> Option<Option<Command>> {
        let overview = self.screen.fleet.as_ref()?.overview;
        let open = |s: &mut State, n: usize| {
            if n < s.machines.len() {
                s.show_machine(n);
                s.set_overview(false);
            }
        };
        match a {
            Action::Up | Action::Down if overview => {
                // The cursor moves through the rows in their sorted order.
                let order: Vec<usize> = self
                    .screen
                    .fleet
                    .as_ref()?
                    .rows
                    .iter()
                    .map(|r| r.index)
                    .collect();
                let pos = order
                    .iter()
                    .position(|i| *i == self.screen.host)
                    .unwrap_or(0);
                let pos = match a {
                    Action::Up => pos.saturating_sub(1),
                    _ => (pos + 1).min(order.len().saturating_sub(1)),
                };
                if let Some(n) = order.get(pos) {
                    self.show_machine(*n);
                }
            }
            Action::CycleSort if overview => {
                if let Some(f) = &mut self.screen.fleet {
                    f.sort = f.sort.next();
                }
            }
            Action::FocusGpu(n) if overview => open(self, usize::from(n)),
            Action::Enter if overview => open(self, self.screen.host),
            Action::Overview => self.set_overview(true),
            Action::Escape
                if !overview
                    && !self.screen.help
                    && !self.screen.map_open
                    && self.screen.alert_open.is_none()
                    && self.screen.prompt.is_none()
                    && self.screen.filter.is_none() =>
            {
                self.set_overview(true);
            }
            _ => return None,
        }
        Some(None)
    }

    fn set_overview(&mut self, on: bool) {
        if let Some(f) = &mut self.screen.fleet {
            f.overview = on;
        }
        if on {
            self.screen.alert_open = None;
        }
    }

    /// Recomputes the overview's rows (a no-op without a fleet).
    pub(crate) fn derive_fleet(&mut self) {
        let Some(fleet) = &mut self.screen.fleet else {
            return;
        };
        fleet.jobs = jobs::derive(&fleet.names, &self.machines);
        let filter = self.screen.filter.as_ref();
        fleet.rows = self
            .machines
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let name = fleet.names.get(i).cloned().unwrap_or_else(|| {
                    m.info
                        .as_ref()
                        .map_or_else(|| format!("host {}", i + 1), |info| info.host.clone())
                });
                let matches = filter.map(|f| {
                    m.processes
                        .values()
                        .filter(|t| t.exited_ms.is_none() && f.matches(t))
                        .count()
                });
                summary(i, name, m, matches)
            })
            .collect();
        let rank = |r: &HostRow| match (&r.state, &r.worst) {
            (HostState::Failing { .. }, _) => 5,
            (_, Some(w)) => w.level.severity() + 1,
            (_, None) => 0,
        };
        match fleet.sort {
            FleetSort::Alert => fleet.rows.sort_by(|a, b| {
                (Reverse(rank(a)), &a.name, a.index).cmp(&(Reverse(rank(b)), &b.name, b.index))
            }),
            FleetSort::Used => fleet.rows.sort_by_key(|r| {
                let share = match (r.used, r.total) {
                    (Some(u), Some(t)) if t > 0 => u128::from(u) * 1_000_000 / u128::from(t),
                    _ => 0,
                };
                (Reverse(share), r.index)
            }),
            FleetSort::Name => fleet
                .rows
                .sort_by(|a, b| (&a.name, a.index).cmp(&(&b.name, b.index))),
        }
    }
}

fn summary(index: usize, name: String, m: &Machine, matches: Option<usize>) -> HostRow {
    let memory: Vec<_> = m
        .gpus
        .values()
        .filter_map(|g| g.sample.memory.value())
        .collect();
    let sum = |f: fn(&crate::sample::Memory) -> u64| {
        (!memory.is_empty()).then(|| memory.iter().map(|x| f(x)).sum::<u64>())
    };
    // One condition (class, process, GPU) counts once, whichever sources raised it.
    let mut conditions: Vec<(&str, Option<u32>, Option<&str>)> = Vec::new();
    let mut worst: Option<&crate::model::Alert> = None;
    for a in m.alerts.iter().filter(|a| a.level != Level::Notice) {
        let condition = (a.class.as_str(), a.pid, a.gpu_uuid.as_deref());
        if !conditions.contains(&condition) {
            conditions.push(condition);
        }
        // Newest first: a later one replaces the worst only when it is more severe.
        if worst.is_none_or(|w| a.level.severity() > w.level.severity()) {
            worst = Some(a);
        }
    }
    let worst = worst.map(|a| Worst {
        level: a.level,
        class: a.class.clone(),
        title: a.title.clone(),
        pid: a.pid,
        others: conditions.len() - 1,
    });
    let bars = m.gpus_in_order().iter().map(|g| g.segments).collect();
    let state = match &m.source {
        SourceState::Starting => HostState::Starting,
        SourceState::Running => HostState::Ok {
            age_ms: m.last_sample_ms.map(|t| m.now_ms.saturating_sub(t)),
        },
        SourceState::Failing { since_ms, reason } => HostState::Failing {
            since_ms: *since_ms,
            reason: reason.clone(),
        },
        SourceState::Ended => HostState::Ended,
    };
    HostRow {
        index,
        name,
        gpus: m.gpus.len(),
        bars,
        used: sum(|x| x.used),
        total: sum(|x| x.total),
        worst,
        state,
        matches,
    }
}
