//! The block map pane and requests to a probe: `m` opens the selected process's map, `M` asks
//! its probe for a map now, `R` turns allocation recording on or off, `e` exports the full map in
//! the framework's own format. The state only asks: a request is written by the app loop on
//! `Command::Probe`; the probe's answer arrives in a sample, and is said on the status line.

use crate::sample::request::{Ask, Purpose, Verb, request_id};
use crate::screen::{Command, State};

/// How long a request waits for its probe's answer before the status line says it got none.
pub const ANSWER_WAIT_MS: u64 = 60_000;

/// A request written, waiting for its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pending {
    pub ask: Ask,
    pub at_ms: u64,
}

/// What a key asks of the selected process's probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeKey {
    Map,
    /// On when it is off, off when it is on.
    Recording,
    Export,
}

impl State {
    /// `M`, `R`, `e`: the request for the selected process, or why there is none on the status line.
    pub(crate) fn ask_probe(&mut self, key: ProbeKey) -> Option<Command> {
        let ask = match self.probe_ask(key) {
            Ok(ask) => ask,
            Err(text) => {
                self.screen.status = Some(text);
                return None;
            }
        };
        let what = match ask.verb {
            Verb::Map => "a map",
            Verb::RecordOn => "to record allocation history",
            Verb::RecordOff => "to stop recording allocation history",
            Verb::Export => "an export of its full map",
            Verb::Where => "where its main thread is",
        };
        self.screen.status = Some(format!("asking pid {}'s probe for {what}", ask.pid));
        self.screen.asks.push(Pending {
            ask,
            at_ms: self.machine().latest_ms(),
        });
        Some(Command::Probe(ask))
    }

    fn probe_ask(&self, key: ProbeKey) -> Result<Ask, String> {
        if let Some(reason) = &self.screen.requests_off {
            return Err(format!("requests to probes are off: {reason}"));
        }
        if self.screen.host != 0 {
            return Err("requests go only to the probes of this machine".into());
        }
        let t = self
            .selected_process()
            .ok_or_else(|| "no process selected".to_string())?;
        let pid = t.key.pid;
        if t.exited_ms.is_some() {
            return Err(format!("pid {pid} has exited"));
        }
        if let Some(why) = t.sample.pool.reason() {
            return Err(format!("pid {pid} has no probe: {why}"));
        }
        let recording = self
            .machine()
            .map_of(pid, t.key.start_time)
            .and_then(|m| m.recording.as_ref());
        let verb = match key {
            ProbeKey::Map => Verb::Map,
            ProbeKey::Export => Verb::Export,
            ProbeKey::Recording if recording.is_some_and(|r| r.on) => Verb::RecordOff,
            ProbeKey::Recording => Verb::RecordOn,
        };
        // Ids are times: one a millisecond, kept rising if keys come faster.
        let mut id = request_id(self.machine().latest_ms(), Purpose::Person);
        if let Some(last) = self.screen.asks.iter().map(|p| p.ask.id).max() {
            id = id.max(last + 10);
        }
        Ok(Ask {
            pid,
            start_time: t.key.start_time,
            verb,
            id,
        })
    }

    /// After a sample: the answers that arrived, said on the status line (an export that is
    /// ready becomes `Command::TakeExport`), and requests that waited too long.
    pub(crate) fn take_answers(&mut self) -> Option<Command> {
        let machine = &self.machines[0];
        let now = machine.latest_ms();
        let mut command = None;
        let mut said = None;
        self.screen.asks.retain(|p| {
            let pid = p.ask.pid;
            let track = machine.map_of(pid, p.ask.start_time);
            let answer = track
                .and_then(|t| t.answer.as_ref())
                .filter(|a| a.id == p.ask.id);
            let text = match answer {
                Some(a) if !a.ok => format!(
                    "pid {pid}'s probe refused {}: {}",
                    p.ask.verb.word(),
                    a.detail
                ),
                Some(a) => match p.ask.verb {
                    Verb::Map => format!("pid {pid}'s probe took a map (m shows it)"),
                    Verb::RecordOn => format!("pid {pid} records its allocation history now"),
                    Verb::RecordOff => format!("pid {pid} stopped recording allocation history"),
                    Verb::Where => format!("pid {pid}'s probe said where its main thread is"),
                    Verb::Export => {
                        command = Some(Command::TakeExport {
                            pid,
                            name: a.detail.clone(),
                        });
                        format!("pid {pid}'s probe wrote {}: moving it", a.detail)
                    }
                },
                None if now.saturating_sub(p.at_ms) > ANSWER_WAIT_MS => format!(
                    "pid {pid}'s probe did not answer {} within {} s",
                    p.ask.verb.word(),
                    ANSWER_WAIT_MS / 1000
                ),
                None => return true,
            };
            said = Some(text);
            false
        });
        if said.is_some() {
            self.screen.status = said;
        }
        command
    }

    /// A request the app loop could not write: it waits no longer.
    pub(crate) fn ask_failed(&mut self, id: u64, text: String) {
        self.screen.asks.retain(|p| p.ask.id != id);
        self.screen.status = Some(text);
    }
}

#[cfg(test)]
mod tests;
