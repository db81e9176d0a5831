//! The application state: every derived value is computed here, in `update`; render only reads it.
//!
//! `State` never reads a clock: each message carries its time, so replays and tests are exact.

pub mod history;
pub mod process;
pub mod units;

use std::collections::BTreeMap;

use crate::analysis::{self, Alert};
use crate::input::Action;
use crate::run::{RunEnd, RunInfo};
use crate::source::{GpuSample, GpuStatus, MachineInfo, Reading, Sample};
pub use history::{Point, Ring};
pub use process::{ProcKey, ProcessTrack};

/// How long an exited process is kept (for analysis and snapshots) before it is dropped.
pub const EXITED_GRACE_MS: u64 = 60_000;
/// Window of the growth rate.
pub const GROWTH_WINDOW_MS: u64 = 60_000;
/// Alerts kept; older ones are dropped and counted.
pub const MAX_ALERTS: usize = 200;

/// Settings fixed at start.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub interval_ms: u64,
    pub history_ms: u64,
    /// Draw without Unicode blocks.
    pub ascii: bool,
    pub color: bool,
    /// Replay speed when the samples come from a recording.
    pub replay_speed: Option<f64>,
}

impl Config {
    /// Plain settings: colour off, Unicode drawing, not a replay.
    pub fn new(interval_ms: u64, history_ms: u64) -> Self {
        Config {
            interval_ms,
            history_ms,
            ascii: false,
            color: false,
            replay_speed: None,
        }
    }

    /// Points each history ring holds.
    pub fn ring_capacity(&self) -> usize {
        usize::try_from(self.history_ms / self.interval_ms.max(1)).unwrap_or(usize::MAX) + 1
    }
}

/// Where the samples stand.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceState {
    /// The source is starting (NVML initialising).
    Starting,
    Running,
    /// The last tick failed; the reason, and since when.
    Failing {
        since_ms: u64,
        reason: String,
    },
    /// A replay reached its end.
    Ended,
}

/// Messages that change the state.
#[derive(Debug, Clone)]
pub enum Msg {
    Started(MachineInfo),
    Sample(Sample),
    SourceFailed {
        at_ms: u64,
        reason: String,
    },
    SourceEnded,
    /// The current time, sent when no sample has come for a while (shows sample age).
    Clock(u64),
    Action(Action),
    /// A line for the status bar (e.g. where a snapshot went, or why it failed).
    Status(String),
    /// `gpumon run`'s command ended.
    RunEnded(RunEnd),
}

/// What the app loop must do after an update (the I/O that `State` does not do itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Quit,
    WriteSnapshot,
    /// Stop `gpumon run`'s command.
    StopRun,
}

/// Four segments of the memory bar, in bytes; they add up to `total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segments {
    pub total: u64,
    /// Device memory of the listed processes (those whose memory NVML could read).
    pub processes: u64,
    /// Used memory not attributed to a listed process (`used - processes`, at least 0).
    pub other: u64,
    /// Driver/firmware reserved; `None` with NVML v1, where it is inside `used`.
    pub reserved: Option<u64>,
    pub free: u64,
}

/// One GPU: its latest sample and history.
#[derive(Debug, Clone)]
pub struct GpuTrack {
    pub sample: GpuSample,
    pub segments: Option<Segments>,
    /// Used memory over the history window.
    pub used: Ring,
    /// Since when the GPU has been lost, if it is.
    pub lost_since_ms: Option<u64>,
    /// Total memory as last read; kept while the GPU is lost, so its history keeps its scale.
    pub total: Option<u64>,
    /// Processes on it whose device memory NVML could not give.
    pub unattributed: usize,
    /// Alerts that name this GPU.
    pub alerts: usize,
}

/// The columns the process table can be sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    DeviceMemory,
    Growth,
    Vms,
    Pid,
    Gpu,
}

impl Sort {
    pub fn label(self) -> &'static str {
        match self {
            Sort::DeviceMemory => "device memory",
            Sort::Growth => "growth",
            Sort::Vms => "VMS",
            Sort::Pid => "PID",
            Sort::Gpu => "GPU",
        }
    }

    fn next(self) -> Sort {
        match self {
            Sort::DeviceMemory => Sort::Growth,
            Sort::Growth => Sort::Vms,
            Sort::Vms => Sort::Pid,
            Sort::Pid => Sort::Gpu,
            Sort::Gpu => Sort::DeviceMemory,
        }
    }
}

/// The process filter in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    Pid(u32),
    /// Case-insensitive text matched against command and user.
    Text(String),
    /// `gpumon run`'s command: its PID and every process whose output goes to its log (the
    /// children it started inherit it). `log` is the absolute path.
    Run {
        pid: u32,
        log: String,
    },
}

impl Filter {
    /// Digits are a PID; anything else is text; blank is no filter.
    pub fn parse(text: &str) -> Option<Filter> {
        let t = text.trim();
        if t.is_empty() {
            None
        } else if let Ok(pid) = t.parse() {
            Some(Filter::Pid(pid))
        } else {
            Some(Filter::Text(t.to_lowercase()))
        }
    }

    pub fn label(&self) -> String {
        match self {
            Filter::Pid(p) => format!("pid {p}"),
            Filter::Text(t) => format!("\"{t}\""),
            Filter::Run { pid, .. } => format!("run pid {pid}"),
        }
    }

    fn matches(&self, t: &ProcessTrack) -> bool {
        match self {
            Filter::Pid(p) => t.sample.pid == *p,
            Filter::Text(text) => [&t.sample.command, &t.sample.user]
                .iter()
                .any(|r| r.value().is_some_and(|v| v.to_lowercase().contains(text))),
            Filter::Run { pid, log } => {
                t.sample.pid == *pid || t.sample.log.value().is_some_and(|l| l.contains(log))
            }
        }
    }
}

/// Which list Up/Down moves in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Processes,
    Alerts,
}

/// Everything the screen shows, and the history behind it.
#[derive(Debug, Clone)]
pub struct State {
    pub config: Config,
    pub machine: Option<MachineInfo>,
    pub source: SourceState,
    /// The latest time known (from samples or clock messages).
    pub now_ms: u64,
    pub last_sample_ms: Option<u64>,
    /// Keyed by UUID; shown in NVML index order.
    pub gpus: BTreeMap<String, GpuTrack>,
    pub processes: BTreeMap<ProcKey, ProcessTrack>,
    /// Derived: the processes shown, filtered and sorted.
    pub rows: Vec<ProcKey>,
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
    /// Newest first, at most `MAX_ALERTS`.
    pub alerts: Vec<Alert>,
    pub alerts_dropped: u64,
    pub alert_selected: usize,
    pub status: Option<String>,
    /// The command `gpumon run` started.
    pub run: Option<RunInfo>,
}

impl State {
    pub fn new(config: Config) -> Self {
        State {
            config,
            machine: None,
            source: SourceState::Starting,
            now_ms: 0,
            last_sample_ms: None,
            gpus: BTreeMap::new(),
            processes: BTreeMap::new(),
            rows: Vec::new(),
            selected: None,
            focus: None,
            filter: None,
            prompt: None,
            sort: Sort::DeviceMemory,
            paused: false,
            help: false,
            pane: Pane::Processes,
            alerts: Vec::new(),
            alerts_dropped: 0,
            alert_selected: 0,
            status: None,
            run: None,
        }
    }

    /// GPUs in NVML index order.
    pub fn gpus_in_order(&self) -> Vec<&GpuTrack> {
        let mut v: Vec<&GpuTrack> = self.gpus.values().collect();
        v.sort_by(|a, b| (a.sample.index, &a.sample.uuid).cmp(&(b.sample.index, &b.sample.uuid)));
        v
    }

    pub fn selected_process(&self) -> Option<&ProcessTrack> {
        self.selected.as_ref().and_then(|k| self.processes.get(k))
    }

    pub fn update(&mut self, msg: Msg) -> Option<Command> {
        match msg {
            Msg::Started(m) => {
                self.machine = Some(m);
                self.source = SourceState::Running;
            }
            Msg::Sample(s) => {
                self.now_ms = self.now_ms.max(s.at_ms);
                if !self.paused {
                    self.ingest(s);
                }
            }
            Msg::SourceFailed { at_ms, reason } => {
                self.now_ms = self.now_ms.max(at_ms);
                let since_ms = match &self.source {
                    SourceState::Failing { since_ms, .. } => *since_ms,
                    _ => at_ms,
                };
                self.source = SourceState::Failing { since_ms, reason };
            }
            Msg::SourceEnded => self.source = SourceState::Ended,
            Msg::Clock(now) => self.now_ms = self.now_ms.max(now),
            Msg::Status(text) => self.status = Some(text),
            Msg::RunEnded(end) => return self.run_ended(end),
            Msg::Action(a) => return self.act(a),
        }
        None
    }

    fn ingest(&mut self, s: Sample) {
        let at = s.at_ms;
        self.last_sample_ms = Some(at);
        self.source = SourceState::Running;
        let cap = self.config.ring_capacity();

        for g in s.gpus {
            let track = self.gpus.entry(g.uuid.clone()).or_insert_with(|| GpuTrack {
                sample: g.clone(),
                segments: None,
                used: Ring::new(cap),
                lost_since_ms: None,
                total: None,
                unattributed: 0,
                alerts: 0,
            });
            match &g.status {
                GpuStatus::Ok => track.lost_since_ms = None,
                GpuStatus::Lost { .. } => {
                    track.lost_since_ms.get_or_insert(at);
                }
            }
            track.used.push(at, g.memory.value().map(|m| m.used));
            if let Some(m) = g.memory.value() {
                track.total = Some(m.total);
            }
            track.sample = g;
        }

        for mut p in s.processes {
            // Look the process up with a key that borrows the sample's UUID (no copy of it for
            // a process already tracked), then hand the UUID back.
            let key = ProcKey {
                gpu_uuid: std::mem::take(&mut p.gpu_uuid),
                pid: p.pid,
                start_time: p.start_time.get(),
            };
            if let Some(track) = self.processes.get_mut(&key) {
                p.gpu_uuid = key.gpu_uuid;
                track.observe(p, at);
            } else {
                p.gpu_uuid.clone_from(&key.gpu_uuid);
                let mut track = ProcessTrack::new(&p, at, cap);
                track.observe(p, at);
                self.processes.insert(key, track);
            }
        }
        for t in self.processes.values_mut() {
            if t.last_seen_ms < at && t.exited_ms.is_none() {
                t.exited_ms = Some(at);
            }
        }
        self.processes.retain(|_, t| {
            t.exited_ms
                .is_none_or(|e| at.saturating_sub(e) <= EXITED_GRACE_MS)
        });

        for track in self.gpus.values_mut() {
            let (sum, unknown) = processes_on(&self.processes, &track.sample.uuid)
                .filter(|t| t.exited_ms.is_none() && t.sample.gpu_uuid == track.sample.uuid)
                .fold((0u64, 0usize), |(sum, n), t| {
                    match t.sample.device_memory.get() {
                        Some(b) => (sum.saturating_add(b), n),
                        None => (sum, n + 1),
                    }
                });
            track.unattributed = unknown;
            track.segments = track.sample.memory.value().map(|m| Segments {
                total: m.total,
                processes: sum,
                other: m.used.saturating_sub(sum),
                reserved: m.reserved.get(),
                free: m.free,
            });
        }

        for f in &s.failures {
            let alert = analysis::alert_for_failure(f, self);
            self.push_alert(alert);
        }
        for alert in analysis::scan_history(self, at) {
            self.push_alert(alert);
        }
        self.count_gpu_alerts();
        self.derive_rows();
    }

    fn push_alert(&mut self, alert: Alert) {
        self.alerts.insert(0, alert);
        if self.alerts.len() > MAX_ALERTS {
            self.alerts.truncate(MAX_ALERTS);
            self.alerts_dropped += 1;
        }
    }

    fn count_gpu_alerts(&mut self) {
        for g in self.gpus.values_mut() {
            g.alerts = self
                .alerts
                .iter()
                .filter(|a| a.gpu_uuid.as_deref() == Some(g.sample.uuid.as_str()))
                .count();
        }
    }

    /// Recomputes the visible rows and keeps the selection on a visible row.
    fn derive_rows(&mut self) {
        let mut rows: Vec<&ProcessTrack> = self
            .processes
            .values()
            .filter(|t| t.exited_ms.is_none())
            .filter(|t| self.focus.as_ref().is_none_or(|f| &t.sample.gpu_uuid == f))
            .filter(|t| self.filter.as_ref().is_none_or(|f| f.matches(t)))
            .collect();
        let gpu_index =
            |t: &ProcessTrack| self.gpus.get(&t.sample.gpu_uuid).map(|g| g.sample.index);
        rows.sort_by(|a, b| {
            let by = match self.sort {
                Sort::DeviceMemory => b
                    .sample
                    .device_memory
                    .get()
                    .cmp(&a.sample.device_memory.get()),
                Sort::Growth => b
                    .growth
                    .unwrap_or(f64::MIN)
                    .total_cmp(&a.growth.unwrap_or(f64::MIN)),
                Sort::Vms => b.sample.vms.get().cmp(&a.sample.vms.get()),
                Sort::Pid => a.sample.pid.cmp(&b.sample.pid),
                Sort::Gpu => gpu_index(a).cmp(&gpu_index(b)),
            };
            by.then_with(|| a.key.cmp(&b.key))
        });
        let old_pos = self
            .selected
            .as_ref()
            .and_then(|k| self.rows.iter().position(|r| r == k));
        // Reuse the previous rows' keys (and their UUID strings): no allocation per row per tick.
        self.rows.truncate(rows.len());
        for (row, t) in self.rows.iter_mut().zip(&rows) {
            row.gpu_uuid.clone_from(&t.key.gpu_uuid);
            row.pid = t.key.pid;
            row.start_time = t.key.start_time;
        }
        let kept = self.rows.len();
        self.rows.extend(rows[kept..].iter().map(|t| t.key.clone()));
        let still_there = self
            .selected
            .as_ref()
            .is_some_and(|k| self.rows.contains(k));
        if !still_there {
            let pos = old_pos.unwrap_or(0).min(self.rows.len().saturating_sub(1));
            self.selected = self.rows.get(pos).cloned();
        }
        self.alert_selected = self.alert_selected.min(self.alerts.len().saturating_sub(1));
    }

    fn act(&mut self, a: Action) -> Option<Command> {
        if self.asking() {
            return self.answer(a);
        }
        match a {
            Action::Quit => return self.quit(),
            Action::StopRun | Action::LeaveRun => return None,
            Action::Snapshot => return Some(Command::WriteSnapshot),
            Action::Up => self.step(-1),
            Action::Down => self.step(1),
            Action::FilterPrompt => {
                self.prompt = Some(match &self.filter {
                    Some(Filter::Pid(p)) => p.to_string(),
                    Some(Filter::Text(t)) => t.clone(),
                    Some(Filter::Run { pid, .. }) => pid.to_string(),
                    None => String::new(),
                });
            }
            Action::PromptChar(c) => {
                if let Some(p) = &mut self.prompt
                    && p.chars().count() < 64
                    && !c.is_control()
                {
                    p.push(c);
                }
            }
            Action::PromptBackspace => {
                if let Some(p) = &mut self.prompt {
                    p.pop();
                }
            }
            Action::PromptApply => {
                if let Some(p) = self.prompt.take() {
                    self.filter = Filter::parse(&p);
                }
            }
            Action::Escape => {
                if self.help {
                    self.help = false;
                } else if self.prompt.take().is_none() {
                    self.filter = None;
                }
            }
            Action::FilterSelected => {
                if let Some(k) = &self.selected {
                    self.filter = Some(Filter::Pid(k.pid));
                }
            }
            Action::CycleSort => self.sort = self.sort.next(),
            Action::TogglePause => self.paused = !self.paused,
            Action::FocusNext => {
                let order: Vec<String> = self
                    .gpus_in_order()
                    .iter()
                    .map(|g| g.sample.uuid.clone())
                    .collect();
                self.focus = match &self.focus {
                    None => order.first().cloned(),
                    Some(f) => order
                        .iter()
                        .position(|u| u == f)
                        .and_then(|i| order.get(i + 1).cloned()),
                };
            }
            Action::FocusGpu(n) => {
                let uuid = self
                    .gpus_in_order()
                    .get(usize::from(n))
                    .map(|g| g.sample.uuid.clone());
                if uuid.is_some() {
                    self.focus = uuid;
                }
            }
            Action::ResetPeaks => {
                for t in self.processes.values_mut() {
                    t.peak = t.sample.device_memory.get();
                }
            }
            Action::ToggleHelp => self.help = !self.help,
            Action::TogglePane => {
                self.pane = match self.pane {
                    Pane::Processes if !self.alerts.is_empty() => Pane::Alerts,
                    _ => Pane::Processes,
                };
            }
        }
        self.derive_rows();
        None
    }

    fn step(&mut self, by: isize) {
        if self.pane == Pane::Alerts {
            let last = self.alerts.len().saturating_sub(1);
            self.alert_selected = self.alert_selected.saturating_add_signed(by).min(last);
            return;
        }
        let pos = self
            .selected
            .as_ref()
            .and_then(|k| self.rows.iter().position(|r| r == k))
            .map_or(0, |p| p.saturating_add_signed(by));
        let pos = pos.min(self.rows.len().saturating_sub(1));
        self.selected = self.rows.get(pos).cloned();
    }

    /// Whether a reading of the selected GPU exists (for tests and views).
    pub fn gpu(&self, uuid: &str) -> Option<&GpuTrack> {
        self.gpus.get(uuid)
    }
}

/// The processes tracked on GPU `uuid`, in key order: processes are keyed by GPU first, so a
/// GPU's are one range of the map (no scan of the others).
pub fn processes_on<'a>(
    processes: &'a BTreeMap<ProcKey, ProcessTrack>,
    uuid: &str,
) -> impl Iterator<Item = &'a ProcessTrack> + 'a {
    let key = |pid, start_time| ProcKey {
        gpu_uuid: uuid.to_string(),
        pid,
        start_time,
    };
    processes
        .range(key(0, None)..=key(u32::MAX, Some(u64::MAX)))
        .map(|(_, t)| t)
}

/// `Reading<u64>` helper for views: the value or the reason.
pub fn value_or_reason(r: &Reading<u64>) -> Result<u64, &str> {
    match r {
        Reading::Value(v) => Ok(*v),
        Reading::Unavailable(reason) => Err(reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::ProcessSample;
    use crate::source::scripted::build::{GIB, gpu, machine};

    #[test]
    fn a_lost_gpu_keeps_its_last_known_total() {
        let mut state = State::new(Config::new(1000, 60_000));
        state.update(Msg::Started(machine()));
        let g = gpu(0, 80 * GIB, 4 * GIB, GIB);
        let sample = |at_ms, g: GpuSample| Sample {
            at_ms,
            gpus: vec![g],
            processes: Vec::new(),
            failures: Vec::new(),
        };
        state.update(Msg::Sample(sample(1000, g.clone())));
        let lost = GpuSample {
            status: GpuStatus::Lost {
                reason: "GPU has fallen off the bus".into(),
            },
            memory: Reading::na("GPU is lost"),
            ..g.clone()
        };
        state.update(Msg::Sample(sample(2000, lost)));
        let track = state.gpu(&g.uuid).unwrap();
        assert_eq!(track.segments, None);
        assert_eq!(track.total, Some(80 * GIB));
        assert_eq!(track.lost_since_ms, Some(2000));
    }
    #[test]
    fn the_run_filter_keeps_the_command_and_the_writers_of_its_log() {
        use crate::source::scripted::build::process;
        let mut state = State::new(Config::new(1000, 60_000));
        let g = gpu(0, 80 * GIB, 4 * GIB, GIB);
        let log = |p: &mut ProcessSample, r: Reading<Vec<String>>| p.log = r;
        let mut procs: Vec<ProcessSample> = (100..104)
            .map(|pid| {
                process(
                    pid,
                    &g,
                    GIB,
                    crate::source::Framework::Pytorch,
                    "python x.py",
                )
            })
            .collect();
        log(&mut procs[0], Reading::na("not a file (stdout is a pipe)"));
        log(&mut procs[1], Reading::Value(vec!["/w/run.log".into()]));
        log(&mut procs[2], Reading::Value(vec!["/w/other.log".into()]));
        log(
            &mut procs[3],
            Reading::na("not readable (permission denied)"),
        );
        state.filter = Some(Filter::Run {
            pid: 100,
            log: "/w/run.log".into(),
        });
        state.update(Msg::Sample(Sample {
            at_ms: 1000,
            gpus: vec![g],
            processes: procs,
            failures: Vec::new(),
        }));
        let shown: Vec<u32> = state.rows.iter().map(|k| k.pid).collect();
        assert_eq!(shown, vec![100, 101]);
        assert_eq!(state.filter.as_ref().unwrap().label(), "run pid 100");
    }
}
