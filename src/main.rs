//! gpumon's entry point: parses the command line, builds the real sources, runs the screen or a
//! subcommand, and turns every failure into one line on stderr and an exit status
//! (0 success, 1 runtime failure, 2 bad usage or no usable GPU/NVML).

use std::ffi::OsString;
use std::io::{BufReader, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use crossterm::event::EventStream;
use gpumon::analysis::context::short_command;
use gpumon::app::{self, Exit};
use gpumon::cli::{Cli, Command, Format, LiveArgs};
use gpumon::logs::LogWatch;
use gpumon::model::{Config, Filter, Msg, State};
use gpumon::run::no_gpu::NoGpu;
use gpumon::run::{self, RunEnd, RunInfo};
use gpumon::sampler::{self, Factory};
use gpumon::source::Source;
use gpumon::source::live::LiveSource;
use gpumon::source::nvml::NvmlReader;
use gpumon::source::procfs::ProcReader;
use gpumon::source::replay::ReplaySource;
use gpumon::{record, snapshot, terminal};

const HINT: &str = "hint: `gpumon --demo` shows a real recording without a GPU";

/// A failure and the status it exits with.
struct Fail {
    code: u8,
    message: String,
}

impl Fail {
    fn usage(message: impl Into<String>) -> Self {
        Fail {
            code: 2,
            message: message.into(),
        }
    }
    fn runtime(message: impl std::fmt::Display) -> Self {
        Fail {
            code: 1,
            message: message.to_string(),
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            eprintln!("gpumon: {}", gpumon::cli::one_line_error(&e));
            return ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(code) => code,
        Err(f) => {
            eprintln!("gpumon: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode, Fail> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(4)
        .enable_all()
        .build()
        .map_err(Fail::runtime)?;
    match cli.command {
        None => runtime.block_on(live(cli.live)),
        Some(Command::Record {
            file,
            duration,
            interval,
            logs,
        }) => {
            let n = runtime
                .block_on(record::record(
                    live_factory(logs),
                    &file,
                    interval,
                    duration,
                    shutdown_signal(),
                ))
                .map_err(|e| match e {
                    record::RecordError::Start(reason) => Fail::usage(format!("{reason}\n{HINT}")),
                    other => Fail::runtime(other),
                })?;
            eprintln!("gpumon: {n} samples written to {}", file.display());
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Snapshot {
            output,
            format,
            replay,
        }) => take_snapshot(output.as_deref(), format, replay.as_deref()),
        Some(Command::Diff { a, b, format }) => diff(&a, &b, format),
        Some(Command::Explain { logs, format }) => explain(&logs, format),
        Some(Command::Run { log_dir, command }) => {
            runtime.block_on(run_command(cli.live, &log_dir, &command))
        }
        Some(Command::Serve(args)) => runtime.block_on(serve(args)),
    }
}

/// `gpumon serve`: the live source, the demo or a recording, served over HTTP until a signal.
async fn serve(args: gpumon::serve::args::ServeArgs) -> Result<ExitCode, Fail> {
    let recorded = match (&args.replay, args.demo) {
        (Some(path), _) => Some(open_replay(path)?),
        (None, true) => Some(ReplaySource::demo().map_err(Fail::runtime)?),
        (None, false) => None,
    };
    let spacing = recorded.as_ref().map(|s| s.header().interval_ms);
    let factory = recorded.map_or_else(|| live_factory(args.logs.clone()), replay_factory);
    gpumon::serve::run(factory, &args, spacing, shutdown_signal())
        .await
        .map_err(|e| match e {
            gpumon::serve::ServeError::Start(reason) => Fail::usage(format!(
                "{reason}\nhint: `gpumon serve --demo` serves a real recording without a GPU"
            )),
            listen @ gpumon::serve::ServeError::Listen { .. } => Fail::runtime(listen),
            other => Fail::usage(other.to_string()),
        })?;
    Ok(ExitCode::SUCCESS)
}

/// The live screen (or a replay of a recording in it).
async fn live(args: LiveArgs) -> Result<ExitCode, Fail> {
    // A replay's samples keep their recorded spacing (`sample_ms`); the sampler hands them out
    // `speed` times faster. By default its history covers the whole recording.
    let replay = if args.demo {
        Some((ReplaySource::demo().map_err(Fail::runtime)?, 1.0))
    } else if let Some(path) = &args.replay {
        Some((open_replay(path)?, args.speed.unwrap_or(1.0)))
    } else {
        None
    };
    let (factory, sample_ms, tick, history, speed) = match replay {
        Some((source, speed)) => {
            let sample_ms = source.header().interval_ms.max(1);
            // At most a week, as `--history` (a recording's times are not to be trusted).
            let week = u64::try_from(gpumon::cli::MAX_HISTORY.as_millis()).unwrap_or(u64::MAX);
            let span = source.span_ms().min(week).div_ceil(60_000).max(1) * 60_000;
            let tick = Duration::from_millis(sample_ms)
                .div_f64(speed)
                .max(Duration::from_millis(10));
            let history = args.history.unwrap_or(Duration::from_millis(span));
            (
                replay_factory(source),
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
                live_factory(args.logs.clone()),
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
        state.filter = Filter::parse(text);
    }

    let (tx, rx) = tokio::sync::mpsc::channel::<Msg>(16);
    let sampler = sampler::spawn(factory, tick, tx);
    let options = app::Options {
        snapshot_dir: args.snapshot_dir.clone(),
        live_clock: speed.is_none(),
        stop_run: None,
    };
    let exit = screen(&mut state, rx, options).await;
    sampler.abort();
    match exit? {
        Exit::Quit => Ok(ExitCode::SUCCESS),
        Exit::Signal(n) => Ok(signal_code(n)),
        Exit::StartFailed(reason) => Err(Fail::usage(format!("{reason}\n{HINT}"))),
    }
}

/// `gpumon run`: the command started with its output in a new log, then the screen filtered to
/// it, until the user quits (see `gpumon::run` for what happens to the command then).
async fn run_command(args: LiveArgs, dir: &Path, argv: &[OsString]) -> Result<ExitCode, Fail> {
    if args.demo || args.replay.is_some() {
        return Err(Fail::usage(
            "`gpumon run` watches a live command: it cannot be combined with --replay or --demo",
        ));
    }
    require_terminal()?;
    let program = argv
        .first()
        .ok_or_else(|| Fail::usage("no command to run"))?;
    let now = gpumon::clock::unix_ms() / 1000;
    let log = run::log_file::create(dir, program, now)
        .map_err(|e| Fail::usage(format!("cannot create a log in {}: {e}", dir.display())))?;
    // Made before the command can write, so the log is followed from its first line.
    let mut logs = vec![log.absolute.clone()];
    logs.extend(args.logs.iter().cloned());
    let watch = LogWatch::new(&logs);
    let child = run::child::spawn(argv, &log.file).map_err(|e| {
        let _ = std::fs::remove_file(&log.absolute);
        Fail::usage(format!("cannot start {}: {e}", program.to_string_lossy()))
    })?;
    let line: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let command = short_command(&line.join(" "));
    let pid = child.id();
    eprintln!("gpumon: {command} (pid {pid}) writes to {}", log.shown);

    let ms = u64::try_from(args.interval.as_millis()).unwrap_or(1000);
    let history = args.history.unwrap_or(Duration::from_secs(600));
    let mut state = State::new(config(&args, ms, history, None));
    state.filter = Some(Filter::Run {
        pid,
        log: log.absolute.display().to_string(),
    });
    state.run = Some(RunInfo::new(pid, command.clone(), log.shown.clone()));
    let (tx, rx) = tokio::sync::mpsc::channel::<Msg>(16);
    let mut handle = run::child::watch(child, tx.clone());
    let sampler = sampler::spawn(run_factory(watch, logs), args.interval, tx);
    let options = app::Options {
        snapshot_dir: args.snapshot_dir.clone(),
        live_clock: true,
        stop_run: Some(handle.stopper()),
    };
    let exit = screen(&mut state, rx, options).await;
    sampler.abort();
    let left = || {
        eprintln!(
            "gpumon: {command} (pid {pid}) is still running; its output goes to {}",
            log.shown
        );
    };
    let ended = |end: RunEnd| {
        eprintln!("gpumon: {command} {}", end.describe());
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

/// Fails (exit 2) before anything starts when there is no terminal to draw on.
fn require_terminal() -> Result<(), Fail> {
    if std::io::stdout().is_terminal() {
        Ok(())
    } else {
        Err(Fail::usage(
            "standard output is not a terminal; use `gpumon snapshot` or `gpumon record` for files",
        ))
    }
}

fn config(args: &LiveArgs, interval_ms: u64, history: Duration, speed: Option<f64>) -> Config {
    Config {
        interval_ms,
        history_ms: u64::try_from(history.as_millis()).unwrap_or(u64::MAX),
        ascii: args.ascii || !locale_is_utf8(),
        color: !args.no_color && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        replay_speed: speed,
    }
}

/// The terminal set up, the app loop until it ends, the terminal restored.
async fn screen(
    state: &mut State,
    rx: tokio::sync::mpsc::Receiver<Msg>,
    options: app::Options,
) -> Result<Exit, Fail> {
    let mut guard =
        terminal::enter().map_err(|e| Fail::runtime(format!("cannot set up the terminal: {e}")))?;
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

fn signal_code(n: i32) -> ExitCode {
    ExitCode::from(u8::try_from(128 + n).unwrap_or(1))
}

fn live_factory(logs: Vec<PathBuf>) -> Factory {
    Arc::new(move || {
        let gpu = NvmlReader::new()?;
        let host = ProcReader::new()?;
        Ok(Box::new(LiveSource::new(gpu, host, LogWatch::new(&logs))) as Box<dyn Source>)
    })
}

/// `gpumon run`'s source: NVML and /proc, or without NVML no GPU (and why), so the command's log
/// is still followed. The first source takes `first`, made before the command started; one
/// rebuilt after failures follows the logs from their end.
fn run_factory(first: LogWatch, logs: Vec<PathBuf>) -> Factory {
    let first = std::sync::Mutex::new(Some(first));
    Arc::new(move || {
        let host = ProcReader::new()?;
        let watch = first
            .lock()
            .ok()
            .and_then(|mut w| w.take())
            .unwrap_or_else(|| LogWatch::new(&logs));
        Ok(match NvmlReader::new() {
            Ok(gpu) => Box::new(LiveSource::new(gpu, host, watch)) as Box<dyn Source>,
            Err(e) => Box::new(LiveSource::new(NoGpu::new(e.to_string()), host, watch)),
        })
    })
}

fn replay_factory(source: ReplaySource) -> Factory {
    let cell = std::sync::Mutex::new(Some(source));
    Arc::new(move || {
        let taken = cell.lock().ok().and_then(|mut c| c.take());
        taken
            .map(|s| Box::new(s) as Box<dyn Source>)
            .ok_or_else(|| {
                gpumon::source::SourceError::Unavailable("the replay cannot restart".into())
            })
    })
}

fn open_replay(path: &Path) -> Result<ReplaySource, Fail> {
    let file =
        std::fs::File::open(path).map_err(|e| Fail::usage(format!("{}: {e}", path.display())))?;
    ReplaySource::read(&path.display().to_string(), BufReader::new(file), false)
        .map_err(|e| Fail::usage(e.to_string()))
}

/// Resolves with the signal number on SIGTERM, SIGHUP (SSH link dropped) or SIGINT.
async fn shutdown_signal() -> i32 {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut hup), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => 15,
        _ = hup.recv() => 1,
        _ = int.recv() => 2,
    }
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

fn take_snapshot(
    output: Option<&Path>,
    format: Format,
    replay: Option<&Path>,
) -> Result<ExitCode, Fail> {
    let config = |interval_ms| Config::new(interval_ms, 600_000);
    let state = match replay {
        Some(path) => {
            let source = open_replay(path)?;
            let mut state = State::new(config(source.header().interval_ms));
            state.update(Msg::Started(source.header().machine.clone()));
            for s in source.samples() {
                state.update(Msg::Sample(s.clone()));
            }
            state
        }
        None => {
            let start = |e: gpumon::source::SourceError| Fail::usage(format!("{e}\n{HINT}"));
            let mut source = live_factory(Vec::new())().map_err(start)?;
            let mut state = State::new(config(1000));
            state.update(Msg::Started(source.machine().map_err(start)?));
            state.update(Msg::Sample(source.sample().map_err(Fail::runtime)?));
            state
        }
    };
    let now = state.last_sample_ms.unwrap_or(state.now_ms);
    let snap = snapshot::Snapshot::from_state(&state, now);
    let bytes = match format {
        Format::Json => snap.to_json(),
        Format::Text => snapshot::text::render(&snap).into_bytes(),
    };
    match output {
        None => print_out(&String::from_utf8_lossy(&bytes)),
        Some(p) if p == Path::new("-") => print_out(&String::from_utf8_lossy(&bytes)),
        Some(p) => {
            snapshot::write_atomic(p, &bytes).map_err(Fail::runtime)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn diff(a: &Path, b: &Path, format: Format) -> Result<ExitCode, Fail> {
    let read = |p: &Path| snapshot::read(p).map_err(|e| Fail::usage(e.to_string()));
    let (sa, sb) = (read(a)?, read(b)?);
    let d = snapshot::diff::diff(&sa, &sb);
    let text = match format {
        Format::Text => format!(
            "A: {}\nB: {}\n{}",
            a.display(),
            b.display(),
            snapshot::diff::render_text(&d)
        ),
        Format::Json => snapshot::diff::render_json(&d),
    };
    print_out(&text)
}

fn explain(logs: &[PathBuf], format: Format) -> Result<ExitCode, Fail> {
    let text = gpumon::analysis::explain::explain(logs, format).map_err(Fail::runtime)?;
    print_out(&text)
}

/// Writes to stdout; a closed pipe (`| head`) is not an error worth a message.
fn print_out(text: &str) -> Result<ExitCode, Fail> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Fail::runtime(e)),
        _ => Ok(ExitCode::SUCCESS),
    }
}
