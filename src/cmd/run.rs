//! `gpumon run -- CMD…`: the command started with its output in a new log, then the screen
//! filtered to it (see `crate::run` for what happens to the command when the user quits).

use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use super::live::{config, require_terminal, screen};
use super::{Fail, signal_code, sources};
use crate::analysis::context::short_command;
use crate::app::{self, Exit};
use crate::cli::LiveArgs;
use crate::logs::LogWatch;
use crate::run;
use crate::sampler;
use crate::screen::{Filter, Msg, RunEnd, RunInfo, State};

/// `gpumon run`: the command started with its output in a new log, then the screen filtered to
/// it, until the user quits (see `crate::run` for what happens to the command then).
pub(super) async fn run_command(
    args: LiveArgs,
    dir: &Path,
    argv: &[OsString],
    probe: Option<Option<u64>>,
) -> Result<ExitCode, Fail> {
    if args.demo || args.replay.is_some() {
        return Err(Fail::usage(
            "`gpumon run` watches a live command: it cannot be combined with --replay or --demo",
        ));
    }
    require_terminal()?;
    let program = argv
        .first()
        .ok_or_else(|| Fail::usage("no command to run"))?;
    let now = crate::clock::unix_ms() / 1000;
    let log = run::log_file::create(dir, program, now)
        .map_err(|e| Fail::usage(format!("cannot create a log in {}: {e}", dir.display())))?;
    // Made before the command can write, so the log is followed from its first line.
    let mut logs = vec![log.absolute.clone()];
    logs.extend(args.logs.iter().cloned());
    let watch = LogWatch::new(&logs);
    // `probe`: the allocator probe, recording allocation history (this many events) or not.
    let env = if let Some(record) = probe {
        let ms = u64::try_from(args.every().as_millis()).unwrap_or(1000);
        let env = super::probe::prepare(None, None, ms).map_err(|e| {
            Fail::usage(format!(
                "cannot set up the allocator probe: {e} (--no-probe runs without it)"
            ))
        })?;
        env.recording(record).vars()
    } else {
        Vec::new()
    };
    let child = run::child::spawn(argv, &log.file, &env).map_err(|e| {
        let _ = std::fs::remove_file(&log.absolute);
        Fail::usage(format!("cannot start {}: {e}", program.to_string_lossy()))
    })?;
    let line: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let command = short_command(&line.join(" "));
    let pid = child.id();
    crate::say!("gpumon: {command} (pid {pid}) writes to {}", log.shown);

    let ms = u64::try_from(args.every().as_millis()).unwrap_or(1000);
    let history = args.history.unwrap_or(Duration::from_secs(600));
    let mut state = State::new(config(&args, ms, history, None));
    let run_filter = Filter::Run {
        pid,
        log: log.absolute.display().to_string(),
    };
    state.screen.filter = Some(run_filter.clone());
    state.screen.run = Some(RunInfo::new(pid, command.clone(), log.shown.clone()));
    state.screen.signals_off = super::live::signals_off(&args);
    state.screen.requests_off = super::live::requests_off(&args, true);
    let (tx, rx) = tokio::sync::mpsc::channel::<Msg>(16);
    let mut handle = run::child::watch(child, tx.clone());
    let sampler = sampler::spawn(sources::run_factory(watch, logs), args.every(), tx);
    let options = app::Options {
        snapshot_dir: args.snapshot_dir.clone(),
        live_clock: true,
        stop_run: Some(handle.stopper()),
        start_times: sources::start_times(state.screen.signals_off.is_none()),
        mouse: !args.no_mouse,
        opened: None,
        requests: sources::requests(state.screen.requests_off.is_none()),
    };
    let exit = screen(&mut state, rx, options).await;
    sampler.abort();
    // The screen is closed and the terminal restored: its alerts stay on the terminal (not when
    // the terminal itself is gone, SIGHUP).
    if matches!(exit, Ok(Exit::Quit) | Ok(Exit::Signal(2 | 15))) {
        let report = state.run_report(&run_filter);
        let _ = super::print_out(&report, crate::cli::Format::Text);
    }
    let left = || {
        crate::say!(
            "gpumon: {command} (pid {pid}) is still running; its output goes to {}",
            log.shown
        );
    };
    let ended = |end: RunEnd| {
        crate::say!("gpumon: {command} {}", end.describe());
        ExitCode::from(end.code())
    };
    match exit {
        Ok(Exit::Quit) => Ok(handle.ended().map_or_else(
            || {
                left();
                ExitCode::SUCCESS
            },
            ended,
        )),
        // The terminal is gone (SSH dropped): the command goes on, writing to its log.
        Ok(Exit::Signal(1)) => {
            left();
            Ok(signal_code(1))
        }
        Ok(Exit::Signal(n)) => {
            ended(handle.stop().await);
            Ok(signal_code(n))
        }
        Ok(Exit::StartFailed(reason)) => {
            ended(handle.stop().await);
            Err(Fail::runtime(reason))
        }
        Err(f) => {
            left();
            Err(f)
        }
    }
}
