//! The live screen, or a replay of a recording in it: the terminal set up, the app loop over
//! the pipeline's events, the terminal restored.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use crossterm::event::EventStream;

use super::{Fail, HINT, shutdown_signal, signal_code, sources};
use crate::app::{self, Exit};
use crate::cli::LiveArgs;
use crate::model::Config;
use crate::screen::{Filter, Msg, State};
use crate::{sampler, terminal};

/// The live screen (or a replay of a recording in it).
pub(super) async fn live(args: LiveArgs) -> Result<ExitCode, Fail> {
    // A replay's samples keep their recorded spacing (`sample_ms`); the sampler hands them out
    // `speed` times faster. By default its history covers the whole recording.
    let replay = if args.demo {
        Some((
            crate::source::replay::ReplaySource::demo().map_err(Fail::runtime)?,
            1.0,
        ))
    } else if let Some(path) = &args.replay {
        Some((sources::open_replay(path)?, args.speed.unwrap_or(1.0)))
    } else {
        None
    };
    let (factory, sample_ms, tick, history, speed) = match replay {
        Some((source, speed)) => {
            let sample_ms = source.header().interval_ms.max(1);
            // At most a week, as `--history` (a recording's times are not to be trusted).
            let week = u64::try_from(crate::cli::MAX_HISTORY.as_millis()).unwrap_or(u64::MAX);
            let span = source.span_ms().min(week).div_ceil(60_000).max(1) * 60_000;
            let tick = Duration::from_millis(sample_ms)
                .div_f64(speed)
                .max(Duration::from_millis(10));
            let history = args.history.unwrap_or(Duration::from_millis(span));
            (
                sources::replay_factory(source),
                sample_ms,
                tick,
                history,
                Some(speed),
            )
        }
        None => {
            let ms = u64::try_from(args.interval.as_millis()).unwrap_or(1000);
            let history = args.history.unwrap_or(Duration::from_secs(600));
            (
                sources::live_factory(args.logs.clone()),
                ms,
                args.interval,
                history,
                None,
            )
        }
    };
    require_terminal()?;
    let mut state = State::new(config(&args, sample_ms, history, speed));
    if let Some(text) = &args.filter {
        state.screen.filter = Filter::parse(text);
    }

    let (tx, rx) = tokio::sync::mpsc::channel::<Msg>(16);
    let sampler = sampler::spawn(factory, tick, tx);
    let options = app::Options {
        snapshot_dir: args.snapshot_dir.clone(),
        live_clock: speed.is_none(),
        stop_run: None,
        mouse: !args.no_mouse,
    };
    let exit = screen(&mut state, rx, options).await;
    sampler.abort();
    match exit? {
        Exit::Quit => Ok(ExitCode::SUCCESS),
        Exit::Signal(n) => Ok(signal_code(n)),
        Exit::StartFailed(reason) => Err(Fail::usage(format!("{reason}\n{HINT}"))),
    }
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
