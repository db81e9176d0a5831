//! The subcommands behind `main.rs`: each in its own module, the real sources built in one
//! place (`sources`), every failure turned into a [`Fail`] (one line on stderr and an exit status:
//! 0 success, 1 runtime failure, 2 bad usage or no usable GPU/NVML).

// The live screen's first (see lib.rs on order).
mod live;
mod sources;

mod diff;
mod docs;
mod explain;
mod export;
mod files;
mod fleet;
mod given;
mod probe;
mod run;
mod serve;

use std::io::Write;
use std::process::ExitCode;

use crate::cli::{Cli, Command, Format};
use crate::record;

const HINT: &str = "hint: `gpumon --demo` shows a real recording without a GPU";

/// A failure and the status it exits with.
pub struct Fail {
    pub code: u8,
    pub message: String,
}

impl Fail {
    pub fn usage(message: impl Into<String>) -> Self {
        Fail {
            code: 2,
            message: message.into(),
        }
    }
    pub fn runtime(message: impl std::fmt::Display) -> Self {
        Fail {
            code: 1,
            message: message.to_string(),
        }
    }
}

/// Makes a panic end gpumon with status 101 after its message, in every build and every command;
/// the screen's own hook restores the terminal first. One exception: a panic while `serve`
/// answers a connection is logged in one line and unwinds that connection's task only, so the
/// server keeps answering the others (the release profile unwinds for this).
pub fn exit_on_panic() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if let Some(peer) = crate::serve::http::connection_peer() {
            let what = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            let at = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            let what = what.lines().next().unwrap_or_default();
            crate::say!(
                "gpumon: answering {peer} panicked ({what}{at}); that connection is closed, the server goes on"
            );
            return;
        }
        previous(info);
        std::process::exit(101);
    }));
}

/// Runs what the command line asks for.
pub fn dispatch(cli: Cli) -> Result<ExitCode, Fail> {
    // One thread runs every front end's select loop and its tasks; NVML and /proc reads go to the
    // blocking pool. Fewer threads, less memory: the work is a few reads a second. A fleet's
    // pollers hold at most `remote::CONCURRENCY` more (threads start only when needed).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .max_blocking_threads(4 + crate::remote::CONCURRENCY)
        .enable_all()
        .build()
        .map_err(Fail::runtime)?;
    match cli.command {
        None => runtime.block_on(live::live(cli.live)),
        Some(Command::Record {
            file,
            duration,
            interval,
            logs,
        }) => {
            let recorded = runtime
                .block_on(record::record(
                    sources::live_factory(logs),
                    &file,
                    interval,
                    duration,
                    // Probes are asked for maps during leak and fragmentation alerts, as serve does.
                    sources::requests(true),
                    shutdown_signal(),
                ))
                .map_err(|e| match e {
                    record::RecordError::Start(reason) => Fail::usage(format!("{reason}\n{HINT}")),
                    other => Fail::runtime(other),
                })?;
            let n = recorded.samples;
            crate::say!("gpumon: {n} samples written to {}", file.display());
            for alert in &recorded.alerts {
                crate::say!("gpumon: alert: {alert}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Snapshot {
            output,
            export: Some(pid),
            ..
        }) => export::export(pid, output.as_deref()),
        Some(Command::Snapshot {
            output,
            format,
            replay,
            export: None,
        }) => files::take_snapshot(output.as_deref(), format, replay.as_deref()),
        Some(Command::Diff {
            a,
            b,
            format,
            token_file,
            tls,
        }) => diff::diff(&a, &b, format, token_file.as_deref(), &tls),
        Some(Command::Explain { logs, format }) => explain::explain(&logs, format),
        Some(Command::Completions { shell }) => print_out(&docs::completions(shell), Format::Text),
        Some(Command::Man { dir: None }) => print_out(&docs::man(), Format::Text),
        Some(Command::Man { dir: Some(dir) }) => docs::write_pages(&dir),
        Some(Command::Run {
            log_dir,
            no_probe,
            record_allocations,
            no_record_allocations,
            record_entries,
            command,
        }) => {
            let probe = (!no_probe).then(|| {
                crate::cli::record_allocations(
                    record_allocations,
                    no_record_allocations,
                    record_entries,
                )
            });
            runtime.block_on(run::run_command(cli.live, &log_dir, &command, probe))
        }
        Some(Command::Probe { what }) => probe::probe(what),
        Some(Command::Serve(args)) => runtime.block_on(serve::serve(args)),
    }
}

pub(crate) fn signal_code(n: i32) -> ExitCode {
    ExitCode::from(u8::try_from(128 + n).unwrap_or(1))
}

/// Resolves with the signal number on SIGTERM, SIGHUP (SSH link dropped), SIGINT, SIGQUIT or
/// SIGUSR1: each ends gpumon through its front end, which puts the terminal back (the default
/// action of the last two would leave it in the alternate screen with the mouse captured).
pub(crate) async fn shutdown_signal() -> i32 {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut hup), Ok(mut int), Ok(mut quit), Ok(mut usr1)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::quit()),
        signal(SignalKind::user_defined1()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => 15,
        _ = hup.recv() => 1,
        _ = int.recv() => 2,
        _ = quit.recv() => 3,
        _ = usr1.recv() => 10,
    }
}

/// Writes to stdout, escaped as `form` escapes (`format::escape`: nothing from data reaches the
/// terminal as a control); a closed pipe (`| head`) is not an error worth a message.
pub(crate) fn print_out(text: &str, form: Format) -> Result<ExitCode, Fail> {
    let text = crate::format::escape(text, form);
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Fail::runtime(e)),
        _ => Ok(ExitCode::SUCCESS),
    }
}
