//! What each key's action does to the screen's state (and, for `r`, to the machine's peaks).

use crate::input::Action;
use crate::model::Machine;
use crate::screen::maps::ProbeKey;
use crate::screen::{Command, Emphasis, Filter, Pane, State};

impl State {
    pub(crate) fn act(&mut self, a: Action) -> Option<Command> {
        if self.asking() {
            return self.answer(a);
        }
        if self.screen.signal.is_some() {
            return self.answer_signal(a);
        }
        if let Some(done) = self.fleet_act(a) {
            self.derive_rows();
            return done;
        }
        match a {
            Action::Quit => return self.quit(),
            Action::StopRun | Action::LeaveRun | Action::SendSignal(_) | Action::Overview => {
                return None;
            }
            Action::Suspend => return Some(Command::Suspend),
            Action::Signal => self.ask_signal(),
            Action::Enter if self.screen.alert_open.is_some() => self.select_alert_process(),
            Action::Enter => self.open_selected_alert(),
            // Over an open alert the scrolling keys arrive as `AlertTop`, measured by the view.
            Action::Up | Action::Down if self.screen.alert_open.is_some() => {}
            Action::PageUp | Action::PageDown => {}
            Action::AlertTop(top) => {
                if let Some(open) = &mut self.screen.alert_open {
                    open.top = top;
                }
            }
            Action::SelectAlert(n) => self.click_alert(n),
            Action::WheelAlerts(by) => {
                if !self.screen.alert_rows.is_empty() {
                    self.screen.pane = Pane::Alerts;
                    self.step(by);
                }
            }
            Action::Snapshot => return Some(Command::WriteSnapshot),
            Action::AskMap => return self.ask_probe(ProbeKey::Map),
            Action::ToggleRecording => return self.ask_probe(ProbeKey::Recording),
            Action::Export => return self.ask_probe(ProbeKey::Export),
            Action::MapPane => self.screen.map_open = !self.screen.map_open,
            Action::Up => self.step(-1),
            Action::Down => self.step(1),
            Action::FilterPrompt => {
                self.screen.prompt = Some(match &self.screen.filter {
                    Some(Filter::Pid(p)) => p.to_string(),
                    Some(Filter::Text(t)) => t.clone(),
                    Some(Filter::Run { pid, .. }) => pid.to_string(),
                    None => String::new(),
                });
            }
            Action::PromptChar(c) => {
                if let Some(p) = &mut self.screen.prompt
                    && p.chars().count() < crate::input::PROMPT_MAX
                    && !c.is_control()
                {
                    p.push(c);
                }
            }
            Action::PromptBackspace => {
                if let Some(p) = &mut self.screen.prompt {
                    p.pop();
                }
            }
            Action::PromptApply => {
                if let Some(p) = self.screen.prompt.take() {
                    self.screen.filter = Filter::parse(&p);
                }
            }
            Action::Escape => {
                if self.screen.help {
                    self.screen.help = false;
                } else if self.screen.alert_open.is_some() {
                    self.screen.alert_open = None;
                } else if self.screen.map_open {
                    self.screen.map_open = false;
                } else if self.screen.prompt.take().is_none() {
                    self.screen.filter = None;
                }
            }
            Action::FilterSelected => {
                if let Some(k) = &self.screen.selected {
                    self.screen.filter = Some(Filter::Pid(k.pid));
                }
            }
            Action::CycleSort => self.screen.sort = self.screen.sort.next(),
            // With no distributed job in view there is nothing to group: said, not retitled.
            Action::ToggleJobs if !self.screen.by_job && self.machine().jobs.is_empty() => {
                self.screen.status = Some(
                    "no distributed job here: J groups a job's ranks (by their launchers' \
                     variables or probes)"
                        .into(),
                );
            }
            Action::ToggleJobs => self.screen.by_job = !self.screen.by_job,
            Action::TogglePause => {
                self.screen.paused = !self.screen.paused;
                if !self.screen.paused {
                    self.machines.iter_mut().for_each(Machine::resume);
                }
            }
            Action::FocusNext => {
                let order: Vec<String> = self
                    .machine()
                    .gpus_in_order()
                    .iter()
                    .map(|g| g.sample.uuid.clone())
                    .collect();
                self.screen.focus = match &self.screen.focus {
                    None => order.first().cloned(),
                    Some(f) => order
                        .iter()
                        .position(|u| u == f)
                        .and_then(|i| order.get(i + 1).cloned()),
                };
            }
            Action::FocusGpu(n) => {
                if let Some(uuid) = self.gpu_uuid(n) {
                    self.screen.focus = Some(uuid);
                }
            }
            Action::ClickGpu(n) => {
                if let Some(uuid) = self.gpu_uuid(n) {
                    let again = self.screen.focus.as_ref() == Some(&uuid);
                    self.screen.focus = (!again).then_some(uuid);
                }
            }
            Action::ResetPeaks => self.machine_mut().reset_peaks(),
            Action::ToggleHelp => self.screen.help = !self.screen.help,
            Action::ToggleChart => {
                self.screen.emphasis = match self.screen.emphasis {
                    Emphasis::Table => Emphasis::Chart,
                    Emphasis::Chart => Emphasis::Table,
                };
            }
            Action::ToggleScale => self.screen.scale = self.screen.scale.toggled(),
            Action::Zoom(out) => {
                let now = self
                    .screen
                    .chart
                    .as_ref()
                    .map_or_else(|| super::chart::span_ms(self.machine()), |c| c.span_ms);
                self.screen.zoom = Some(super::chart::zoom::step(now, out));
            }
            Action::SelectRow(n) => {
                if let Some(k) = self.screen.rows.get(n) {
                    self.screen.selected = Some(k.clone());
                    self.screen.pane = Pane::Processes;
                }
            }
            Action::Scroll(by) => {
                self.screen.pane = Pane::Processes;
                self.step(by);
            }
            Action::TogglePane => {
                self.screen.pane = match self.screen.pane {
                    Pane::Processes if !self.screen.alert_rows.is_empty() => Pane::Alerts,
                    _ => Pane::Processes,
                };
            }
        }
        self.derive_rows();
        None
    }

    /// The UUID of GPU `n` (by position in index order).
    fn gpu_uuid(&self, n: u8) -> Option<String> {
        self.machine()
            .gpus_in_order()
            .get(usize::from(n))
            .map(|g| g.sample.uuid.clone())
    }

    fn step(&mut self, by: isize) {
        if self.screen.pane == Pane::Alerts {
            let last = self.screen.alert_rows.len().saturating_sub(1);
            self.screen.alert_selected = self
                .screen
                .alert_selected
                .saturating_add_signed(by)
                .min(last);
            return;
        }
        let pos = self
            .screen
            .selected
            .as_ref()
            .and_then(|k| self.screen.rows.iter().position(|r| r == k))
            .map_or(0, |p| p.saturating_add_signed(by));
        let pos = pos.min(self.screen.rows.len().saturating_sub(1));
        self.screen.selected = self.screen.rows.get(pos).cloned();
    }
}
