//! `gpumon run [--log-dir DIR] -- CMD ARGS…` (DESIGN §4): the command runs in its own process
//! group with stdin from /dev/null and stdout+stderr going to `DIR/gpumon-run-<cmd>-<UTC>.log`;
//! the screen is filtered to it and the processes writing that log (its children inherit it),
//! and the log is followed for allocation failures.
//!
//! Quitting while the command runs asks first: `k` stops it (SIGTERM to its process group, then
//! SIGKILL after [`crate::screen::run::KILL_AFTER`]) and gpumon exits with its status; `l` leaves it running
//! (its output keeps going to the log). Once it has ended, gpumon says so and exits with its
//! status when the user quits, at once if the user was already quitting. Without NVML the
//! command still runs and its log is still followed: the GPU panel shows why there are no GPU
//! readings ([`no_gpu::NoGpu`]).

pub mod child;
pub mod hook_dir;
pub mod log_file;
pub mod no_gpu;
pub mod probe;
