//! The screen's state: which machine and process are selected, the filter, sort, focus, prompt,
//! pane and status line. It refers to machines (`State::machines`, today exactly one) but the
//! machines' data is theirs: samples reach them through `pipeline::apply`, keys change only this.

mod actions;
pub mod alerts;
pub mod chart;
pub mod exits;
mod fleet;
pub mod jobs;
pub mod maps;
pub mod mig;
pub mod run;
pub mod signal;
mod table;

use crate::input::Action;
use crate::model::{Config, Event, Machine, ProcKey, ProcessTrack};
use crate::pipeline;
pub use chart::{ChartData, Emphasis, Scale};
pub use fleet::{
    Fleet, FleetJob, FleetSort, HostRow, HostState, JobHost, Largest, Remote, RootCause, Worst,
};
pub use jobs::{JobLine, TableLine};
pub use run::{RunEnd, RunInfo};
pub use signal::{Sig, SignalAsk, SignalRequest};
pub use table::{Filter, Sort};

/// Messages that change the state.
#[derive(Debug, Clone)]
pub enum Msg {
    /// An event from the sampler of machine `n` (an index into `State::machines`).
    Host(usize, Event),
    /// What the poller of remote machine `n` reports.
    Remote(usize, Remote),
    Action(Action),
    /// A line for the status bar (e.g. where a snapshot went, or why it failed).
    Status(String),
    /// `gpumon run`'s command ended.
    RunEnded(RunEnd),
    /// The request with this id could not be written; why, for the status line.
    AskFailed(u64, String),
}

impl From<Event> for Msg {
    /// An event of the first (local) machine.
    fn from(event: Event) -> Self {
        Msg::Host(0, event)
    }
}

/// What the app loop must do after an update (the I/O that `State` does not do itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Quit,
    WriteSnapshot,
    /// Stop `gpumon run`'s command.
    StopRun,
    /// Ctrl-Z: give the terminal back and stop, like any terminal program.
    Suspend,
    /// Signal a process, once re-checked by (pid, start time).
    Signal(SignalRequest),
    /// Write a request for a process's probe (`<pid>.request`).
    Probe(crate::sample::request::Ask),
    /// Move the export `name` that pid's probe wrote into the snapshot directory.
    TakeExport {
        pid: u32,
        name: String,
    },
}

/// Which list Up/Down moves in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Processes,
    Alerts,
}

/// What the user is looking at and doing; every field is the screen's own.
#[derive(Debug, Clone)]
pub struct Screen {
    /// The machine in view (an index into `State::machines`).
    pub host: usize,
    /// Derived: the processes shown, filtered and sorted (in the job view, grouped by job).
    pub rows: Vec<ProcKey>,
    /// The table grouped by job (`J`).
    pub by_job: bool,
    /// Derived: in the job view, each job's line above its processes.
    pub job_lines: Vec<JobLine>,
    pub selected: Option<ProcKey>,
    /// The GPU the table is narrowed to (by UUID).
    pub focus: Option<String>,
    pub filter: Option<Filter>,
    /// The filter prompt's text while it is open.
    pub prompt: Option<String>,
    pub sort: Sort,
    pub paused: bool,
    pub help: bool,
    pub pane: Pane,
    /// Position in `alert_rows`.
    pub alert_selected: usize,
    /// Derived: the alerts shown (indices into the machine's), those about the focus and filter.
    pub alert_rows: Vec<usize>,
    /// Derived: how many alerts the focus and filter hide, as the list says it ("+3 on other GPUs").
    pub alerts_hidden: Option<String>,
    /// The alert read whole over the screen (Enter), while it is open.
    pub alert_open: Option<alerts::OpenAlert>,
    pub status: Option<String>,
    /// The command `gpumon run` started.
    pub run: Option<RunInfo>,
    /// The signal dialog, while it is open.
    pub signal: Option<SignalAsk>,
    /// Why signals cannot be sent from this screen (`--read-only`, a replay), if they cannot.
    pub signals_off: Option<String>,
    /// The hosts and their overview, when there is more than one machine.
    pub fleet: Option<Fleet>,
    /// Derived: the memory chart of the GPU in focus.
    pub chart: Option<ChartData>,
    /// Derived: the MIG instances of the machine in view.
    pub mig: Vec<mig::MigRow>,
    pub emphasis: Emphasis,
    /// The chart's and sparklines' y axis: fitted to the data or the whole GPU (`g`).
    pub scale: Scale,
    /// The chart's and sparklines' span set with `-` and `+`; `None`: the history there is, up
    /// to the window.
    pub zoom: Option<u64>,
    /// The selected process's block map is shown (`m`).
    pub map_open: bool,
    /// Requests written to probes, waiting for their answers.
    pub asks: Vec<maps::Pending>,
    /// Why requests to probes cannot be made from this screen (a replay, `--read-only`).
    pub requests_off: Option<String>,
}

impl Default for Screen {
    fn default() -> Self {
        Screen {
            host: 0,
            rows: Vec::new(),
            by_job: false,
            job_lines: Vec::new(),
            selected: None,
            focus: None,
            filter: None,
            prompt: None,
            sort: Sort::DeviceMemory,
            paused: false,
            help: false,
            pane: Pane::Processes,
            alert_selected: 0,
            alert_rows: Vec::new(),
            alerts_hidden: None,
            alert_open: None,
            status: None,
            run: None,
            signal: None,
            signals_off: None,
            fleet: None,
            chart: None,
            mig: Vec::new(),
            emphasis: Emphasis::Table,
            scale: Scale::Fit,
            zoom: None,
            map_open: false,
            asks: Vec::new(),
            requests_off: None,
        }
    }
}

/// The machines on screen and the screen's own state: what `view::render` draws.
#[derive(Debug, Clone)]
pub struct State {
    pub config: Config,
    /// Never empty: the local machine (or the replayed one) comes first.
    pub machines: Vec<Machine>,
    pub screen: Screen,
}

impl State {
    /// One machine, not yet started.
    pub fn new(config: Config) -> Self {
        let machine = Machine::new(config.clone());
        State::with_machines(config, vec![machine])
    }

    /// Several machines; an empty list gets one not yet started.
    pub fn with_machines(config: Config, mut machines: Vec<Machine>) -> Self {
        if machines.is_empty() {
            machines.push(Machine::new(config.clone()));
        }
        State {
            config,
            machines,
            screen: Screen::default(),
        }
    }

    /// The machine in view.
    pub fn machine(&self) -> &Machine {
        self.machines
            .get(self.screen.host)
            .unwrap_or(&self.machines[0])
    }

    pub fn machine_mut(&mut self) -> &mut Machine {
        let host = self.screen.host.min(self.machines.len() - 1);
        &mut self.machines[host]
    }

    /// Puts machine `n` in view (ignored when there is none): its own rows, nothing selected
    /// or focused from the previous one.
    pub fn show_machine(&mut self, n: usize) {
        if n < self.machines.len() && n != self.screen.host {
            self.screen.host = n;
            self.screen.selected = None;
            self.screen.focus = None;
            self.screen.alert_selected = 0;
            self.screen.alert_open = None;
            self.derive_rows();
        }
    }

    pub fn selected_process(&self) -> Option<&ProcessTrack> {
        let key = self.screen.selected.as_ref()?;
        self.machine().processes.get(key)
    }

    pub fn update(&mut self, msg: Msg) -> Option<Command> {
        match msg {
            Msg::Host(n, event) => {
                let paused = self.screen.paused;
                let machine = self.machines.get_mut(n)?;
                match event {
                    // A paused screen keeps what it shows, its clock too (every "ago" stays);
                    // the time it is told is held for when it resumes.
                    Event::Sample(s) if paused => machine.hold(s),
                    Event::Clock(at_ms) if paused => machine.hold_time(at_ms),
                    Event::SourceFailed { at_ms, reason } if paused => {
                        machine.hold_time(at_ms);
                        machine.fail(at_ms, &reason);
                    }
                    Event::Lap(n) if paused => machine.hold_lap(n),
                    event => pipeline::apply(machine, event),
                }
                if n == self.screen.host {
                    self.derive_rows();
                } else {
                    self.derive_fleet();
                }
                if n == 0 && !self.screen.asks.is_empty() {
                    return self.take_answers();
                }
            }
            Msg::Remote(n, report) => self.remote(n, report),
            Msg::Status(text) => self.screen.status = Some(text),
            Msg::RunEnded(end) => return self.run_ended(end),
            Msg::Action(a) => return self.act(a),
            Msg::AskFailed(id, text) => self.ask_failed(id, text),
        }
        None
    }

    /// Recomputes the rows of the machine in view.
    fn derive_rows(&mut self) {
        let host = self.screen.host.min(self.machines.len() - 1);
        self.screen.derive_rows(&self.machines[host]);
        self.derive_fleet();
    }
}

#[cfg(test)]
mod tests;
