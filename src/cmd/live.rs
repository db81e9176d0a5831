//! The live screen, or a replay of a recording in it: the terminal set up, the app loop over
//! the pipeline's events, the terminal restored.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use crossterm::event::EventStream;

use super::{Fail, HINT, fleet, shutdown_signal, signal_code, sources};
use crate::app::{self, Exit};
use crate::cli::LiveArgs;
use crate::model::Config;
use crate::screen::{Filter, Msg, State};
use crate::source::replay::{ReplaySource, demo_last_at_ms};
use crate::{sampler, terminal};

/// The live screen (or a replay of a recording in it).
pub(super) async fn live(args: LiveArgs) -> Result<ExitCode, Fail> {
    // A replay's samples keep their recorded spacing (`sample_ms`); the sampler hands them out
    // `speed` times faster. Its history covers the whole recording by default (see
    // `replay_history`).
    if args.demo || args.replay.is_some() {
        // A fleet's hosts are polled every --interval; a replay alone has no use for it.
        let fleet = &args.fleet;
        let alone = fleet.remotes.is_empty() && fleet.hosts.is_none() && fleet.prometheus.is_none();
        if let Some(why) = crate::cli::replay_interval_refused(args.interval).filter(|_| alone) {
            return Err(Fail::usage(why));
        }
        if let Some(why) = crate::cli::replay_log_refused(&args.logs) {
            return Err(Fail::usage(why));
        }
    }
    let replay = if args.demo {
        let mut source = ReplaySource::demo().map_err(Fail::runtime)?;
        let span = replay_span(&mut source, demo_last_at_ms());
        let ms = source.header().interval_ms;
        Some((sources::replay_factory(source), ms, span))
    } else if let Some(path) = &args.replay {
        let sources::Replay {
            mut source,
            last_at_ms,
        } = sources::open_replay(path)?;
        let span = replay_span(&mut source, last_at_ms);
        let ms = source.header().interval_ms;
        Some((sources::replay_factory(source), ms, span))
    } else {
        None
    };
    let (factory, sample_ms, tick, history, speed) = match replay {
        Some((factory, sample_ms, span)) => {
            let speed = args.speed.unwrap_or(1.0);
            let sample_ms = sample_ms.max(1);
            let tick = Duration::from_millis(sample_ms)
                .div_f64(speed)
                .max(Duration::from_millis(10));
            let history = args.history.unwrap_or_else(|| replay_history(span));
            (factory, sample_ms, tick, history, Some(speed))
        }
        None => {
            let ms = u64::try_from(args.every().as_millis()).unwrap_or(1000);
            let history = args.history.unwrap_or(Duration::from_secs(600));
            (
                sources::live_factory(args.logs.clone()),
                ms,
                args.every(),
                history,
                None,
            )
        }
    };
    let fleet = fleet::plan(&args.fleet)?;
    require_terminal()?;
    let config = config(&args, sample_ms, history, speed);
    let mut state = match &fleet {
        Some(plan) => plan.state(config),
        None => State::new(config),
    };
    if let Some(text) = &args.filter {
        state.screen.filter = Filter::parse(text);
    }
    state.screen.signals_off = signals_off(&args);
    let local = fleet.as_ref().is_none_or(|plan| plan.local);
    state.screen.requests_off = requests_off(&args, local);

    let (tx, rx) = tokio::sync::mpsc::channel::<Msg>(64);
    let sampler = local.then(|| sampler::spawn(factory, tick, tx.clone()));
    let (opened_tx, opened) = tokio::sync::watch::channel(None);
    if let Some(plan) = fleet {
        plan.start(&state.config, args.every(), opened, &tx);
    }
    drop(tx);
    let options = app::Options {
        snapshot_dir: args.snapshot_dir.clone(),
        live_clock: speed.is_none(),
        stop_run: None,
        start_times: sources::start_times(state.screen.signals_off.is_none()),
        mouse: !args.no_mouse,
        opened: Some(opened_tx),
        requests: sources::requests(state.screen.requests_off.is_none()),
    };
    let exit = screen(&mut state, rx, options).await;
    if let Some(sampler) = sampler {
        sampler.abort();
    }
    match exit? {
        Exit::Quit => Ok(ExitCode::SUCCESS),
        Exit::Signal(n) => Ok(signal_code(n)),
        Exit::StartFailed(reason) => Err(Fail::usage(format!("{reason}\n{HINT}"))),
    }
}

/// The longest default history of a replay (its span beyond this needs `--history`).
const MAX_REPLAY_HISTORY_MS: u64 = 3_600_000;
/// The default history of a replay whose span cannot be read cheaply (a compressed file, a
/// pipe): as live.
const UNKNOWN_SPAN_HISTORY_MS: u64 = 600_000;

/// Time from the recording's first sample to its last, when the last one's time is known.
fn replay_span<R: std::io::BufRead>(
    source: &mut ReplaySource<R>,
    last: Option<u64>,
) -> Option<u64> {
    let first = source.first().ok().flatten()?.at_ms;
    Some(last?.saturating_sub(first))
}

/// A replay's default history: its span in whole minutes, at most an hour (so memory stays
/// bounded however long the recording), or 10 minutes when the span is not known.
fn replay_history(span_ms: Option<u64>) -> Duration {
    let ms = span_ms.map_or(UNKNOWN_SPAN_HISTORY_MS, |s| {
        s.min(MAX_REPLAY_HISTORY_MS).div_ceil(60_000).max(1) * 60_000
    });
    Duration::from_millis(ms)
}

/// Fails (exit 2) before anything starts when there is no terminal to draw on.
pub(super) fn require_terminal() -> Result<(), Fail> {
    if std::io::stdout().is_terminal() {
        Ok(())
    } else {
        Err(Fail::usage(
            "standard output is not a terminal; use `gpumon snapshot` or `gpumon record` for files",
        ))
    }
}

pub(super) fn config(
    args: &LiveArgs,
    interval_ms: u64,
    history: Duration,
    speed: Option<f64>,
) -> Config {
    Config {
        interval_ms,
        history_ms: u64::try_from(history.as_millis()).unwrap_or(u64::MAX),
        ascii: args.ascii || !locale_is_utf8(),
        color: !args.no_color && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        replay_speed: speed,
        keep_exited_ms: u64::try_from(args.keep_exited.as_millis()).unwrap_or(u64::MAX),
    }
}

/// Why the screen must not signal processes, if it must not: `--read-only`, or processes that
/// are not this machine's (a replay, the demo).
pub(super) fn signals_off(args: &LiveArgs) -> Option<String> {
    if args.read_only {
        Some("--read-only".into())
    } else if args.demo {
        Some("the demo replays a recording".into())
    } else if args.replay.is_some() {
        Some("a replay's processes are not this machine's".into())
    } else {
        None
    }
}

/// Why this screen writes no requests to probes, if it does not.
pub(super) fn requests_off(args: &LiveArgs, local: bool) -> Option<String> {
    if !local {
        Some("this machine is left out (--no-local)".into())
    } else {
        signals_off(args)
    }
}

/// The terminal set up, the app loop until it ends, the terminal restored.
pub(super) async fn screen(
    state: &mut State,
    rx: tokio::sync::mpsc::Receiver<Msg>,
    options: app::Options,
) -> Result<Exit, Fail> {
    let mut guard = terminal::enter(options.mouse)
        .map_err(|e| Fail::runtime(format!("cannot set up the terminal: {e}")))?;
    let exit = app::run(
        &mut guard.terminal,
        state,
        rx,
        EventStream::new(),
        shutdown_signal(),
        options,
    )
    .await;
    drop(guard);
    exit.map_err(Fail::runtime)
}

fn locale_is_utf8() -> bool {
    ["LC_ALL", "LC_CTYPE", "LANG"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        .is_some_and(|v| {
            let v = v.to_lowercase();
            v.contains("utf-8") || v.contains("utf8")
        })
}
