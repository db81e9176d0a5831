//! gpumon's entry point: parses the command line and hands it to `gpumon::cmd`, then turns a
//! failure into one line on stderr and its exit status (a usage error: then clap's usage as a
//! hint).

use std::process::ExitCode;

use clap::Parser;
use gpumon::cli::Cli;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            gpumon::say!("gpumon: {}", gpumon::cli::one_line_error(&e));
            gpumon::say!("{}", gpumon::cli::usage_hint(&e));
            return ExitCode::from(2);
        }
    };
    gpumon::cmd::exit_on_panic();
    match gpumon::cmd::dispatch(cli) {
        Ok(code) => code,
        Err(f) => {
            gpumon::say!("gpumon: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}
