//! Many machines on one screen: the hosts' names, the fleet overview (one summary row per host,
//! derived in updates), which host is in view, and what a remote host's poller reports.

use crate::input::Action;
use crate::model::{Level, Machine, SourceState};
use crate::screen::{Command, State};

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
    /// Derived: one summary per machine, in order.
    pub rows: Vec<HostRow>,
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
    pub name: String,
    pub gpus: usize,
    /// Sums over the GPUs whose memory was read; `None` when none was.
    pub used: Option<u64>,
    pub total: Option<u64>,
    /// The worst alert: failures before suspicions, then the newest; its class.
    pub worst: Option<(Level, String)>,
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
                        slot.observe_time(machine.now_ms);
                    } else {
                        *slot = *machine;
                    }
                }
            }
            Remote::Failed { at_ms, reason } => {
                if let Some(slot) = self.machines.get_mut(n) {
                    slot.update(&crate::model::Event::SourceFailed { at_ms, reason });
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
                let last = self.machines.len() - 1;
                let n = match a {
                    Action::Up => self.screen.host.saturating_sub(1),
                    _ => (self.screen.host + 1).min(last),
                };
                self.show_machine(n);
            }
            Action::FocusGpu(n) if overview => open(self, usize::from(n)),
            Action::Enter if overview => open(self, self.screen.host),
            Action::Overview => self.set_overview(true),
            Action::Escape
                if !overview
                    && !self.screen.help
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
    }

    /// Recomputes the overview's rows (a no-op without a fleet).
    pub(crate) fn derive_fleet(&mut self) {
        let Some(fleet) = &mut self.screen.fleet else {
            return;
        };
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
                summary(name, m, matches)
            })
            .collect();
    }
}

fn summary(name: String, m: &Machine, matches: Option<usize>) -> HostRow {
    let memory: Vec<_> = m
        .gpus
        .values()
        .filter_map(|g| g.sample.memory.value())
        .collect();
    let sum = |f: fn(&crate::sample::Memory) -> u64| {
        (!memory.is_empty()).then(|| memory.iter().map(|x| f(x)).sum::<u64>())
    };
    let worst = m
        .alerts
        .iter()
        .find(|a| a.level == Level::Failure)
        .or_else(|| m.alerts.first())
        .map(|a| (a.level, a.class.clone()));
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
        name,
        gpus: m.gpus.len(),
        used: sum(|x| x.used),
        total: sum(|x| x.total),
        worst,
        state,
        matches,
    }
}
