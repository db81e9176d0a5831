//! Each GPU's NVML device handle, looked up once by index and kept for as long as it answers.
//!
//! On an H100 (driver 580) `nvmlDeviceGetHandleByIndex` costs about 30 µs of CPU a call once
//! warm and 6 ms the first time, while a handle stays valid for the whole NVML session that gave
//! it: looking it up every tick was a tick's fifth-dearest NVML call.
//! nvml-wrapper's `Device` borrows its `Nvml`, so the reader, which owns the `Nvml`, cannot keep
//! `Device`s beside it; it keeps the raw handles and wraps one in a `Device` when it reads.

use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};
use nvml_wrapper_sys::bindings::nvmlDevice_t;

/// A raw handle from `nvmlDeviceGetHandleByIndex`. NVML's calls are thread-safe and its handles
/// are plain pointers into the library's own tables, so one may move to another thread (as
/// nvml-wrapper's `Device` does).
#[derive(Clone, Copy)]
struct Raw(nvmlDevice_t);

// SAFETY: see `Raw`: nvml-wrapper declares `Device`, which holds the same pointer, Send.
#[allow(unsafe_code)]
unsafe impl Send for Raw {}

/// The handles of one NVML session's devices, by index.
#[derive(Default)]
pub struct Handles(Vec<Option<Raw>>);

impl Handles {
    /// GPU `index` of `nvml`: its kept handle, else looked up (and kept). `nvml` must be the
    /// session every earlier call was given (the reader owns both).
    #[allow(unsafe_code)]
    pub fn device<'n>(&mut self, nvml: &'n Nvml, index: u32) -> Result<Device<'n>, NvmlError> {
        let i = index as usize;
        if let Some(Some(raw)) = self.0.get(i) {
            // SAFETY: `raw` came from `nvml.device_by_index` of this same session (the reader
            // owns both, and drops the handles with the session); NVML keeps a handle valid
            // until `nvmlShutdown`, which runs only when `nvml` is dropped.
            return Ok(unsafe { Device::new(raw.0, nvml) });
        }
        let dev = nvml.device_by_index(index)?;
        if self.0.len() <= i {
            self.0.resize(i + 1, None);
        }
        // SAFETY: the handle is only copied out, to be wrapped again as above.
        self.0[i] = Some(Raw(unsafe { dev.handle() }));
        Ok(dev)
    }

    /// Drops GPU `index`'s handle: a reading of it failed, so the next tick looks it up again
    /// (and lists the GPU as lost if that fails too).
    pub fn forget(&mut self, index: u32) {
        if let Some(h) = self.0.get_mut(index as usize) {
            *h = None;
        }
    }
}
