//! gpumon's entry point: parses the command line and hands it to `gpumon::cmd`, then turns a
//! failure into one line on stderr and its exit status (a usage error: then clap's usage as a
//! hint).

use std::process::ExitCode;

use clap::Parser;
use gpumon::cli::Cli;

fn main() -> ExitCode {
    one_malloc_arena();
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

/// One malloc arena for the whole process unless the user set glibc's own limit: glibc gives
/// each thread that allocates an arena of its own, and gpumon's threads (the runtime, the event
/// readers, NVML's and CUDA's) allocate little, so the extra arenas were resident memory and
/// nothing else (0.37 MB of a screen's peak on an H200, `tests/fixtures/gpu/h200-code-pages/`).
/// Called before any thread starts.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn one_malloc_arena() {
    let tunables = std::env::var("GLIBC_TUNABLES").unwrap_or_default();
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() && !tunables.contains("arena_max") {
        // SAFETY: mallopt changes a setting of glibc's allocator and touches no memory of ours;
        // no other thread runs yet to allocate meanwhile.
        unsafe { mallopt(M_ARENA_MAX, 1) };
    }
}

// glibc's <malloc.h>. Declared here rather than through the libc crate: a new dependency of the
// library changes every symbol hash in it, and the linker script's names with them.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const M_ARENA_MAX: std::ffi::c_int = -8;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
unsafe extern "C" {
    fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn one_malloc_arena() {}
