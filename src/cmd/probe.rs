//! `gpumon probe env` and `gpumon probe hook`: the allocator probe for jobs gpumon does not
//! start, and the set-up `gpumon run` shares with them.

use std::path::PathBuf;
use std::process::ExitCode;

use super::{Fail, print_out, sources};
use crate::cli::{Format, ProbeCommand};
use crate::run::hook_dir;
use crate::run::probe::{ProbeEnv, private_dir};

pub(super) fn probe(what: ProbeCommand) -> Result<ExitCode, Fail> {
    match what {
        ProbeCommand::Env {
            hook_dir,
            probe_dir,
            interval,
            record_allocations,
            no_record_allocations,
            record_entries,
        } => {
            let ms = u64::try_from(interval.as_millis()).unwrap_or(1000);
            let record = crate::cli::record_allocations(
                record_allocations,
                no_record_allocations,
                record_entries,
            );
            let env = prepare(hook_dir, probe_dir, ms)
                .map_err(Fail::runtime)?
                .recording(record);
            print_out(&env.exports(), Format::Text)
        }
        ProbeCommand::Hook { dir } => {
            let loader = hook_dir::write_plain(&dir)
                .map_err(|e| Fail::runtime(format!("{}: {e}", dir.display())))?;
            print_out(&format!("{}\n", loader.display()), Format::Text)
        }
    }
}

/// Makes the probe directory and the hook directory (owner-only), writes the hook, and gives
/// the environment a job needs. By default both sit in the per-user directory gpumon reads.
pub(super) fn prepare(
    hook_dir: Option<PathBuf>,
    probe_dir: Option<PathBuf>,
    interval_ms: u64,
) -> Result<ProbeEnv, String> {
    let uid = rustix::process::getuid().as_raw();
    let probe_dir = probe_dir.unwrap_or_else(sources::probe_dir);
    let hook_dir = hook_dir.unwrap_or_else(|| {
        probe_dir
            .parent()
            .map_or_else(|| probe_dir.join("hook"), |base| base.join("hook"))
    });
    for dir in [&probe_dir, &hook_dir] {
        private_dir(dir, uid).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    hook_dir::write_private(&hook_dir).map_err(|e| format!("{}: {e}", hook_dir.display()))?;
    let old = std::env::var_os("PYTHONPATH");
    Ok(ProbeEnv::new(
        probe_dir,
        hook_dir,
        interval_ms,
        old.as_deref(),
    ))
}
