//! gpumon: where a machine's GPU memory goes, and why an allocation failed.
//!
//! - `source`: samples from NVML + /proc, a recording, or a script (tests)
//! - `sampler`: runs the source off the async reactor on an interval
//! - `model`: `State` and `update`, where every derived value is computed
//! - `analysis`: alerts from histories and parsed log failures
//! - `view`: render `&State` into a frame; `input`: keys to actions
//! - `recording`, `snapshot`: the versioned file formats; `infile`: every file gpumon is given, opened
//!   once (pipes, `-`, gzip and zstd), its kind told from its first bytes
//! - `app`, `terminal`, `cli`: the loop, the terminal's care, the command line
//! - `run`: `gpumon run`, a command under the screen with its output in a followed log
//! - `remote`: other hosts on the same screen (`--remote`, `--hosts`, `--prometheus`)
//! - `serve`: `gpumon serve`, the samples over HTTP (Prometheus `/metrics`, `/snapshot`)

pub mod analysis;
pub mod app;
pub mod cli;
pub mod clock;
pub mod cmd;
pub mod format;
pub mod infile;
pub mod input;
pub mod kill;
pub mod logs;
pub mod model;
pub mod oom;
pub mod paint;
pub mod pipeline;
pub mod record;
pub mod recording;
pub mod remote;
pub mod run;
pub mod sample;
pub mod sampler;
pub mod screen;
pub mod serve;
pub mod snapshot;
pub mod source;
pub mod terminal;
pub mod tls;
pub mod view;
