//! The command line (DESIGN.md §4): flags, subcommands and the checks on their values.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

pub use crate::format::Format;
pub use replay::{replay_interval_refused, replay_log_refused};
pub use serve::ServeArgs;
pub use tls::ClientTlsArgs;

mod replay;
mod serve;
mod tls;
mod usage;

pub use usage::{one_line_error, usage_hint};

/// Shortest sampling interval accepted.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// Longest history window accepted (a week).
pub const MAX_HISTORY: Duration = Duration::from_secs(7 * 24 * 3600);

#[derive(Debug, Parser)]
#[command(
    name = "gpumon",
    version,
    about = "Where a machine's GPU memory goes, and why an allocation failed",
    after_help = "Without a GPU: `gpumon --demo` replays a real recording made on an H100.",
    args_conflicts_with_subcommands = true,
    group = clap::ArgGroup::new("replaying").args(["replay", "demo"])
)]
pub struct Cli {
    #[command(flatten)]
    pub live: LiveArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Options of the live screen.
#[derive(Debug, Args)]
pub struct LiveArgs {
    /// Time between samples (e.g. 1s, 500ms; at least 100ms) [default: 1s; a replay keeps the
    /// interval it was recorded at: --speed plays it faster or slower]
    #[arg(long, value_parser = parse_interval, allow_hyphen_values = true)]
    pub interval: Option<Duration>,
    /// How much history the sparklines and snapshots keep (e.g. 10m, 1h) [default: 10m; with
    /// --replay/--demo the whole recording up to 1h, 10m for a compressed file or a pipe]
    #[arg(long, value_parser = parse_history, allow_hyphen_values = true)]
    pub history: Option<Duration>,
    /// Start with this filter: digits match a PID, other text matches command or user
    #[arg(long)]
    pub filter: Option<String>,
    /// Where the `s` key writes snapshots
    #[arg(long, default_value = ".")]
    pub snapshot_dir: PathBuf,
    /// Replay a recording instead of reading the GPUs (a file or a pipe; plain, gzip or zstd)
    #[arg(long, conflicts_with = "demo")]
    pub replay: Option<PathBuf>,
    /// Replay speed (with --replay or --demo)
    #[arg(long, requires = "replaying", value_parser = parse_speed, allow_hyphen_values = true)]
    pub speed: Option<f64>,
    /// Replay the real recording built into gpumon (no GPU needed)
    #[arg(long)]
    pub demo: bool,
    /// Follow this log for allocation failures (repeatable)
    #[arg(long = "log", value_name = "FILE")]
    pub logs: Vec<PathBuf>,
    /// No colours (NO_COLOR is honoured too)
    #[arg(long)]
    pub no_color: bool,
    /// Draw with ASCII only (automatic when the locale is not UTF-8)
    #[arg(long)]
    pub ascii: bool,
    /// Leave the mouse to the terminal (its own selection, for copy and paste) instead of
    /// clicking rows and GPU bars
    #[arg(long)]
    pub no_mouse: bool,
    /// How long exited processes stay on screen, dimmed, for inspection (e.g. 30s, 5m)
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration, allow_hyphen_values = true)]
    pub keep_exited: Duration,
    /// Never signal processes (disables K / F9)
    #[arg(long)]
    pub read_only: bool,
    #[command(flatten)]
    pub fleet: FleetArgs,
}

/// The sampling interval when none is given.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);

impl LiveArgs {
    /// The time between samples: `--interval`, or 1 s.
    pub fn every(&self) -> Duration {
        self.interval.unwrap_or(DEFAULT_INTERVAL)
    }
}

/// Other hosts on the same screen (docs/guide/hosts.md).
#[derive(Debug, Args)]
pub struct FleetArgs {
    /// Also show the host that `gpumon serve` serves at this URL, e.g. http://gpu-07:9477 or
    /// https://gpu-07:9477 (repeatable)
    #[arg(long = "remote", value_name = "URL")]
    pub remotes: Vec<String>,
    /// Also show the hosts listed in FILE: one URL or name=URL a line, # comments
    #[arg(long, value_name = "FILE")]
    pub hosts: Option<PathBuf>,
    /// Bearer token for the remote hosts, read from FILE
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Also show the hosts a Prometheus server has GPU series of (gpumon's or dcgm-exporter's)
    #[arg(long, value_name = "URL")]
    pub prometheus: Option<String>,
    /// Leave this machine out (with --remote, --hosts or --prometheus)
    #[arg(long, conflicts_with_all = ["demo", "replay"])]
    pub no_local: bool,
    #[command(flatten)]
    pub tls: ClientTlsArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write one snapshot (JSON or text) without the screen
    Snapshot {
        /// Output file; `-` or none for standard output
        #[arg(short, long)]
        output: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = Format::Json)]
        format: Format,
        /// Take the snapshot from the end of a recording instead of the GPUs (a file, a pipe or
        /// `-`; plain, gzip or zstd)
        #[arg(long)]
        replay: Option<PathBuf>,
        /// Instead of a snapshot, ask the probe of process PID for its framework's own full map
        /// (PyTorch's snapshot pickle, JAX's pprof) and move it to the file given with -o
        #[arg(
            long,
            value_name = "PID",
            requires = "output",
            conflicts_with = "replay"
        )]
        export: Option<u32>,
    },
    /// Record samples to an NDJSON file without the screen
    Record {
        file: PathBuf,
        /// Stop after this long (default: until interrupted)
        #[arg(long, value_parser = parse_duration, allow_hyphen_values = true)]
        duration: Option<Duration>,
        #[arg(long, default_value = "1s", value_parser = parse_interval, allow_hyphen_values = true)]
        interval: Duration,
        /// Follow this log for allocation failures (repeatable)
        #[arg(long = "log", value_name = "FILE")]
        logs: Vec<PathBuf>,
    },
    /// Explain the memory differences between two snapshots: files, recordings, or live from
    /// `gpumon serve`
    #[command(
        after_help = "Each side is a snapshot file (`gpumon snapshot`, or `s` on the screen), a \
recording (`gpumon record`; compared as it stood at its last sample), `-` for standard input, or \
the http:// or https:// URL of a `gpumon serve`, whose /snapshot is read now, e.g. \
`gpumon diff http://gpu-a:9477 https://gpu-b:9477 --tls-ca ca.pem`. Files may be gzip or zstd \
compressed. A path that exists is always read as a file."
    )]
    Diff {
        /// The first side: a snapshot or recording file, or a server's URL (http://HOST:PORT or
        /// https://…)
        #[arg(value_name = "A")]
        a: PathBuf,
        /// The second side: a snapshot or recording file, or a server's URL (http://HOST:PORT or
        /// https://…)
        #[arg(value_name = "B")]
        b: PathBuf,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Bearer token for the URL sides, read from FILE (for servers started with --token-file)
        #[arg(long, value_name = "FILE")]
        token_file: Option<PathBuf>,
        #[command(flatten)]
        tls: ClientTlsArgs,
    },
    /// Serve the samples over HTTP (Prometheus `/metrics`, `/snapshot`, `/healthz`), no screen
    Serve(ServeArgs),
    /// Find and classify the allocation failures in logs, and the failures and risks in
    /// gpumon recordings
    #[command(
        after_help = "Each FILE is a log or a gpumon recording (`gpumon record`), told apart by \
its first bytes, whatever its name: a file, a pipe (`<(zcat train.log.gz)`), or `-` for standard \
input, plain or gzip or zstd compressed. A binary file or a snapshot is refused with what it is; a \
file that cannot be read is named on stderr, the others are reported, and the status is 1. A \
recording cut off mid-line is replayed up to its last whole line. A recording is replayed through the same analysis as the screen, and the alerts raised on the way are \
reported after the logs' failures: OOMs only the allocator probe saw, fragmentation and \
pool-limit risks, processes that ended at their pool's limit, and the failures of the logs it \
followed while recording (each input is reported on its own, so such a log given too is \
reported twice)."
    )]
    Explain {
        /// Logs and recordings
        #[arg(required = true, value_name = "FILE")]
        logs: Vec<PathBuf>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Run a command with its output in a new log, and watch it: the screen shows it and its
    /// children, and its log is followed for allocation failures
    #[command(
        after_help = "Quitting while the command runs asks whether to stop it (k) or leave it \
running (l). Once it has ended, gpumon exits with its status. Without NVML the command still runs \
and its log is still followed."
    )]
    Run {
        /// Where the log `gpumon-run-<cmd>-<UTC>.log` is created
        #[arg(long, default_value = ".")]
        log_dir: PathBuf,
        /// Start the command without the allocator probe (its Python processes then show no
        /// pool figures)
        #[arg(long)]
        no_probe: bool,
        /// Record the job's allocation history from its start (PyTorch), so block maps name the
        /// lines of code that hold the memory (docs/guide/memory-map.md)
        #[arg(long, overrides_with = "no_record_allocations")]
        record_allocations: bool,
        /// Do not record allocation history (the default)
        #[arg(long, overrides_with = "record_allocations")]
        no_record_allocations: bool,
        /// How many allocation events the recording keeps, 1000 to 1000000 [default: 100000]
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1000..=1_000_000))]
        record_entries: Option<u64>,
        /// The command and its arguments, after `--`
        #[arg(
            required = true,
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "CMD"
        )]
        command: Vec<OsString>,
    },
    /// Print a shell completion script (e.g. `source <(gpumon completions bash)`)
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff; e.g. `gpumon man | man -l -`), or write every page into DIR
    Man {
        /// Write gpumon.1 and a page per subcommand (gpumon-explain.1, …) into DIR instead of
        /// printing gpumon.1
        #[arg(value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// The allocator probe for jobs gpumon does not start (sbatch, Kubernetes, torchrun,
    /// notebooks)
    Probe {
        #[command(subcommand)]
        what: ProbeCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum ProbeCommand {
    /// Print the `export` lines that start the probe in every Python process launched after
    /// them: `eval "$(gpumon probe env)"`
    Env {
        /// Where the hook is written (a directory every node of the job can read; default:
        /// next to the probe directory)
        #[arg(long)]
        hook_dir: Option<PathBuf>,
        /// Where the probes write their files (default: the per-user directory gpumon reads)
        #[arg(long)]
        probe_dir: Option<PathBuf>,
        /// How often the probes write
        #[arg(long, default_value = "1s", value_parser = parse_interval, allow_hyphen_values = true)]
        interval: Duration,
        /// Record the job's allocation history from its start (PyTorch), so block maps name the
        /// lines of code that hold the memory (docs/guide/memory-map.md)
        #[arg(long, overrides_with = "no_record_allocations")]
        record_allocations: bool,
        /// Do not record allocation history (the default)
        #[arg(long, overrides_with = "record_allocations")]
        no_record_allocations: bool,
        /// How many allocation events the recording keeps, 1000 to 1000000 [default: 100000]
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1000..=1_000_000))]
        record_entries: Option<u64>,
    },
    /// Write the hook (`sitecustomize.py` and its package `_gpumon_probe/`) into DIR, readable
    /// by every user, to bake into an image; prints the hook's path
    Hook {
        /// The directory to write into (made when missing); put it on the job's `PYTHONPATH`
        dir: PathBuf,
    },
}

/// Whether a job records its allocation history: the flags, else the default.
pub fn record_allocations(on: bool, off: bool, entries: Option<u64>) -> Option<u64> {
    let on = if on || off {
        on
    } else {
        crate::run::probe::RECORD_BY_DEFAULT
    };
    on.then(|| entries.unwrap_or(crate::run::probe::RECORD_ENTRIES))
}

/// A duration like `1s`, `500ms`, `10m`; rejects zero, negatives and absurd values.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s.trim()).map_err(|e| {
        let why = match e {
            humantime::DurationError::UnknownUnit { unit, .. } => {
                format!("{unit:?} is not a unit of time")
            }
            humantime::DurationError::NumberOverflow => "the number is too large".into(),
            humantime::DurationError::Empty => "it is empty".into(),
            _ => "it is not a number followed by a unit".into(),
        };
        format!("{s:?} is not a duration: {why}; try 500ms, 1s, 10m or 2h")
    })?;
    if d.is_zero() {
        return Err(format!("{s:?}: must be more than zero"));
    }
    if d > MAX_HISTORY {
        return Err(format!("{s:?}: longer than a week"));
    }
    Ok(d)
}

pub fn parse_interval(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < MIN_INTERVAL {
        return Err(format!("{s:?}: the interval must be at least 100ms"));
    }
    if d > Duration::from_secs(3600) {
        return Err(format!("{s:?}: the interval must be at most 1h"));
    }
    Ok(d)
}

fn parse_history(s: &str) -> Result<Duration, String> {
    parse_duration(s)
}

pub fn parse_speed(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && (0.01..=1000.0).contains(&x) => Ok(x),
        _ => Err(format!(
            "{s:?}: the speed must be a number from 0.01 to 1000"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonsense_durations_are_refused() {
        for bad in [
            "0",
            "0s",
            "-5s",
            "1e99h",
            "abc",
            "",
            "99999999999999999999s",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert!(parse_interval("50ms").is_err());
        assert_eq!(parse_interval("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_history("10m"), Ok(Duration::from_secs(600)));
        assert!(parse_speed("NaN").is_err());
        assert!(parse_speed("0").is_err());
    }
}
