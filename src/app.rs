//! The app loop: one `tokio::select!` over samples, keys, a slow clock and shutdown signals;
//! `State::update` for every message, a redraw only when something changed.

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use crossterm::event::Event;
use futures_util::{Stream, StreamExt};
use ratatui::Terminal;
use ratatui::backend::Backend;
use tokio::sync::mpsc;

use std::sync::Arc;

use crate::clock::tick_times;
use crate::input::{self, Action};
use crate::model::{Event as HostEvent, SourceState};
use crate::paint::Painter;
use crate::pipeline::alert_maps::AlertMaps;
use crate::sample::request::Ask;
use crate::screen::{Command, Msg, State};
use crate::source::probe::request::Requests;
use crate::view;

/// Reports of remote hosts that arrive within this of each other are drawn in one frame (a
/// fleet of 100 hosts would otherwise redraw 50 times a second at a 2 s interval).
const FLEET_FRAME: Duration = Duration::from_millis(250);

/// How the screen ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// The user quit.
    Quit,
    /// A signal ended it (its number).
    Signal(i32),
    /// The source could not start (e.g. no NVML); the reason, for one line on stderr.
    StartFailed(String),
}

#[derive(Debug, thiserror::Error)]
#[error("terminal: {0}")]
pub struct TerminalError(String);

/// What the loop needs besides the state.
pub struct Options {
    pub snapshot_dir: PathBuf,
    /// Send the wall clock to the state when samples stop coming (live sources only: a
    /// replay's samples carry recorded times).
    pub live_clock: bool,
    /// Where `Command::StopRun` goes (`gpumon run`'s command).
    pub stop_run: Option<mpsc::Sender<()>>,
    /// Re-checks a process before `Command::Signal` signals it; `None` where signals are off.
    pub start_times: Option<std::sync::Arc<dyn crate::kill::StartTimes>>,
    /// Capture the mouse (clicks select, the wheel scrolls); off keeps the terminal's own
    /// selection for copy and paste.
    pub mouse: bool,
    /// Told which host the screen has open (`None`: the fleet overview), so its poller asks
    /// for the whole history.
    pub opened: Option<tokio::sync::watch::Sender<Option<usize>>>,
    /// Writes requests to this machine's probes and takes their exports; `None` where they are
    /// off (a replay, `--read-only`, no local machine).
    pub requests: Option<Arc<dyn Requests>>,
}

/// Runs until quit, a signal, or a source that cannot start.
pub async fn run<B, E>(
    terminal: &mut Terminal<B>,
    state: &mut State,
    mut samples: mpsc::Receiver<Msg>,
    mut events: E,
    shutdown: impl Future<Output = i32>,
    options: Options,
) -> Result<Exit, TerminalError>
where
    B: Backend,
    E: Stream<Item = std::io::Result<Event>> + Unpin,
{
    let (status_tx, mut status_rx) = mpsc::channel::<Msg>(4);
    let mut clock = tokio::time::interval(Duration::from_secs(1));
    clock.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    tokio::pin!(shutdown);
    let mut dirty = true;
    // A remote host's report is drawn with the others that arrive within `FLEET_FRAME`.
    let mut frame_due: Option<tokio::time::Instant> = None;
    let mut samples_open = true;
    let mut alert_maps = AlertMaps::default();
    let mut painter = Painter::default();
    loop {
        if dirty {
            tick_times::time("screen.draw", || {
                painter.draw(terminal, |frame, before| {
                    tick_times::time("screen.render", || {
                        view::render_stamped(frame, state, before)
                    })
                })
            })
            .map_err(|e| TerminalError(e.to_string()))?;
            dirty = false;
            frame_due = None;
            if let Some(opened) = &options.opened {
                let now = (!state.overview()).then_some(state.screen.host);
                opened.send_if_modified(|was| std::mem::replace(was, now) != now);
            }
        }
        tokio::select! {
            msg = samples.recv(), if samples_open => {
                let Some(msg) = msg else {
                    samples_open = false;
                    continue;
                };
                // Alone, a machine that cannot start ends the screen; in a fleet it is a row.
                if let (Msg::Host(_, HostEvent::SourceFailed { reason, .. }), None, None) =
                    (&msg, &state.machine().info, &state.screen.fleet)
                {
                    return Ok(Exit::StartFailed(reason.clone()));
                }
                let remote = matches!(msg, Msg::Remote(..));
                let local_sample = matches!(msg, Msg::Host(0, HostEvent::Sample(_)));
                match tick_times::time("screen.update", || state.update(msg)) {
                    Some(Command::Quit) => return Ok(Exit::Quit),
                    Some(Command::TakeExport { pid, name }) => {
                        take_export(&options, pid, name, &status_tx);
                    }
                    _ => {}
                }
                if local_sample && let Some(requests) = &options.requests {
                    for ask in alert_maps.due(&state.machines[0], state.machines[0].latest_ms()) {
                        // An alert's map is asked quietly: a failure is the next try's.
                        send(requests, ask, None);
                    }
                }
                if remote {
                    frame_due.get_or_insert_with(|| tokio::time::Instant::now() + FLEET_FRAME);
                } else {
                    dirty = true;
                }
            }
            () = tokio::time::sleep_until(frame_due.unwrap_or_else(tokio::time::Instant::now)),
                if frame_due.is_some() => dirty = true,
            event = events.next() => match event {
                Some(Ok(Event::Key(key))) => {
                    let action = if state.asking() {
                        input::map_answer(key)
                    } else if state.screen.signal.is_some() {
                        input::map_signal(key)
                    } else {
                        input::map(key, state.screen.prompt.is_some())
                    };
                    let Some(action) = action else { continue };
                    if act(terminal, &mut painter, state, action, &options, &status_tx)? {
                        return Ok(Exit::Quit);
                    }
                    dirty = true;
                }
                Some(Ok(Event::Mouse(mouse))) => {
                    let size = terminal.size().map_err(|e| TerminalError(e.to_string()))?;
                    let area = ratatui::layout::Rect::new(0, 0, size.width, size.height);
                    let Some(action) = view::mouse::action(area, state, mouse) else { continue };
                    if act(terminal, &mut painter, state, action, &options, &status_tx)? {
                        return Ok(Exit::Quit);
                    }
                    dirty = true;
                }
                Some(Ok(Event::Paste(text))) => {
                    // Text for an open prompt, never keys: a question or the signal dialog
                    // takes none.
                    let prompt = state.screen.prompt.is_some()
                        && !state.asking()
                        && state.screen.signal.is_none();
                    let actions = input::map_paste(&text, prompt);
                    if actions.is_empty() {
                        continue;
                    }
                    for action in actions {
                        if act(terminal, &mut painter, state, action, &options, &status_tx)? {
                            return Ok(Exit::Quit);
                        }
                    }
                    dirty = true;
                }
                Some(Ok(Event::Resize(width, height))) => {
                    fit(terminal, &mut painter, width, height)?;
                    dirty = true;
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(TerminalError(e.to_string())),
                None => return Ok(Exit::Quit),
            },
            Some(msg) = status_rx.recv() => {
                state.update(msg);
                dirty = true;
            }
            _ = clock.tick(), if options.live_clock => {
                let now = crate::clock::unix_ms();
                let stale = state.machine().last_sample_ms.is_some_and(|t| {
                    now.saturating_sub(t) > 2 * state.config.interval_ms
                });
                if stale || matches!(state.machine().source, SourceState::Failing { .. }) {
                    state.update(HostEvent::Clock(now).into());
                    dirty = true;
                }
            }
            signal = &mut shutdown => return Ok(Exit::Signal(signal)),
        }
    }
}

/// Applies a key's or the mouse's action and does the I/O it asks for; true to quit.
fn act<B: Backend>(
    terminal: &mut Terminal<B>,
    painter: &mut Painter,
    state: &mut State,
    action: Action,
    options: &Options,
    status: &mpsc::Sender<Msg>,
) -> Result<bool, TerminalError> {
    // Over an open alert, how far a scrolling key or the wheel goes depends on the screen's size.
    let action = if state.screen.alert_open.is_some() {
        let size = terminal.size().map_err(|e| TerminalError(e.to_string()))?;
        let area = ratatui::layout::Rect::new(0, 0, size.width, size.height);
        view::alert_view::scroll(area, state, action)
    } else {
        action
    };
    match state.update(Msg::Action(action)) {
        Some(Command::Quit) => return Ok(true),
        Some(Command::WriteSnapshot) => {
            write_snapshot(state, &options.snapshot_dir, status.clone());
        }
        Some(Command::StopRun) => {
            if let Some(stop) = &options.stop_run {
                let _ = stop.try_send(());
            }
        }
        Some(Command::Suspend) => {
            crate::terminal::suspend(options.mouse).map_err(|e| TerminalError(e.to_string()))?;
            // It may have been resized while stopped (no resize event reaches a stopped process).
            let size = terminal.size().map_err(|e| TerminalError(e.to_string()))?;
            fit(terminal, painter, size.width, size.height)?;
            terminal.clear().map_err(|e| TerminalError(e.to_string()))?;
            painter.invalidate();
        }
        Some(Command::Probe(ask)) => match &options.requests {
            Some(requests) => send(requests, ask, Some(status.clone())),
            None => {
                state.update(Msg::AskFailed(ask.id, "requests to probes are off".into()));
            }
        },
        Some(Command::TakeExport { pid, name }) => take_export(options, pid, name, status),
        Some(Command::Signal(req)) => {
            let text = match &options.start_times {
                Some(times) => crate::kill::send(times.as_ref(), req).describe(req),
                None => "signals are off on this screen".into(),
            };
            state.update(Msg::Status(text));
        }
        None => {}
    }
    Ok(false)
}

/// Writes a request off the reactor; a failure comes back as a status line when `status` is given.
fn send(requests: &Arc<dyn Requests>, ask: Ask, status: Option<mpsc::Sender<Msg>>) {
    let requests = Arc::clone(requests);
    tokio::task::spawn_blocking(move || {
        if let (Err(text), Some(status)) = (requests.send(&ask), status) {
            let _ = status.blocking_send(Msg::AskFailed(ask.id, text));
        }
    });
}

/// Moves an export the probe wrote into the snapshot directory, off the reactor.
fn take_export(options: &Options, pid: u32, name: String, status: &mpsc::Sender<Msg>) {
    let Some(requests) = options.requests.clone() else {
        return;
    };
    let ext = if name.ends_with(".pb.gz") {
        "pb.gz"
    } else {
        "pickle"
    };
    let to = options.snapshot_dir.join(format!(
        "gpumon-export-{pid}-{}.{ext}",
        crate::clock::unix_ms() / 1000
    ));
    let status = status.clone();
    tokio::task::spawn_blocking(move || {
        let text = match requests.take_export(pid, &name, &to) {
            Ok(path) => format!("pid {pid}'s export written: {}", path.display()),
            Err(e) => format!("pid {pid}'s export failed: {e}"),
        };
        let _ = status.blocking_send(Msg::Status(text));
    });
}

/// Sizes the fixed viewport (`terminal::enter`) to the terminal's `width` x `height`; ratatui
/// clears the screen for it, so the next frame is written whole.
fn fit<B: Backend>(
    terminal: &mut Terminal<B>,
    painter: &mut Painter,
    width: u16,
    height: u16,
) -> Result<(), TerminalError> {
    let area = ratatui::layout::Rect::new(0, 0, width, height);
    painter.invalidate();
    terminal
        .resize(area)
        .map_err(|e| TerminalError(e.to_string()))
}

/// Writes the snapshot off the reactor; the result comes back as a status line.
fn write_snapshot(state: &State, dir: &std::path::Path, status: mpsc::Sender<Msg>) {
    let snapshot = crate::snapshot::Snapshot::from_state(state, crate::clock::unix_ms());
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let text = match crate::snapshot::write_to_dir(&snapshot, &dir) {
            Ok(path) => format!("snapshot written: {}", path.display()),
            Err(e) => format!("snapshot failed: {e}"),
        };
        let _ = status.blocking_send(Msg::Status(text));
    });
}
