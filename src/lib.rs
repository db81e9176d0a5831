//! gpumon: where a machine's GPU memory goes, and why an allocation failed.
//!
//! - `source`: samples from NVML + /proc, a recording, or a script (tests)
//! - `sampler`: runs the source off the async reactor on an interval
//! - `model`: `State` and `update`, where every derived value is computed
//! - `analysis`: alerts from histories and parsed log failures
//! - `view`: render `&State` into a frame; `input`: keys to actions
//! - `recording`, `snapshot`: the versioned file formats
//! - `app`, `terminal`, `cli`: the loop, the terminal's care, the command line

pub mod analysis;
pub mod input;
pub mod logs;
pub mod model;
pub mod recording;
pub mod snapshot;
pub mod source;
pub mod view;
