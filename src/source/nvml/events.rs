//! NVML's event set for the memory-related events (critical Xid errors, double-bit ECC errors,
//! DRAM retirements and their failures), waited on by a thread of its own on the live source's
//! NVML session (`NvmlReader::session`). A GPU that refuses registration (permissions, a
//! container, an unsupported type) is said once with its reason; a failing wait (a GPU lost
//! mid-wait) is said once per reason and retried, and given up after `MAX_FAILURES` in a row.
//!
//! nvml-wrapper's `register_events` frees the whole set when one GPU refuses, and its `wait`
//! drops the event types it does not know; so registration, the supported types and the wait go
//! through the raw symbols, the set still owned (and freed) by nvml-wrapper's `EventSet`.

use std::sync::Arc;
use std::time::Duration;

use nvml_wrapper::error::{NvmlError, nvml_sym, nvml_try};
use nvml_wrapper::{Device, EventSet, Nvml};
use nvml_wrapper_sys::bindings::{
    nvmlEventData_t, nvmlEventTypeDoubleBitEccError, nvmlEventTypeDramRetirementEvent,
    nvmlEventTypeDramRetirementFailure, nvmlEventTypeXidCriticalError,
};

use super::convert::reason;
use crate::sample::GpuEvent;
use crate::sample::health::{EventOrigin, GpuEventKind};
use crate::source::events::{EventSource, Report, Sink};

/// The event types gpumon listens for (single-bit ECC events are left to the counters).
pub const WANTED: u64 = (nvmlEventTypeXidCriticalError
    | nvmlEventTypeDoubleBitEccError
    | nvmlEventTypeDramRetirementEvent
    | nvmlEventTypeDramRetirementFailure) as u64;
/// Failed waits in a row after which the thread gives up.
pub const MAX_FAILURES: u32 = 30;
/// NVML's code for "an Xid whose number it does not know".
const UNKNOWN_XID: u64 = 999;

/// The event from NVML's raw type and data, heard at `at_ms` on the GPU `uuid` names (`None` for
/// a handle that no longer answers); `None` for a type gpumon did not ask for.
pub fn event_of(event_type: u64, data: u64, uuid: Option<String>, at_ms: u64) -> Option<GpuEvent> {
    let kind = if event_type & u64::from(nvmlEventTypeXidCriticalError) != 0 {
        GpuEventKind::Xid {
            code: (data != UNKNOWN_XID).then_some(data),
        }
    } else if event_type & u64::from(nvmlEventTypeDoubleBitEccError) != 0 {
        GpuEventKind::EccUncorrected
    } else if event_type & u64::from(nvmlEventTypeDramRetirementFailure) != 0 {
        GpuEventKind::RemapFailure
    } else if event_type & u64::from(nvmlEventTypeDramRetirementEvent) != 0 {
        GpuEventKind::Remap
    } else {
        return None;
    };
    Some(GpuEvent {
        at_ms,
        gpu_uuid: uuid,
        pci: None,
        kind,
        pid: None,
        process: None,
        origin: EventOrigin::Nvml,
        detail: None,
    })
}

/// One wait for an event: `Ok(None)` when none came in time.
pub trait Wait {
    fn wait(&mut self, timeout_ms: u32) -> Result<Option<GpuEvent>, NvmlError>;
}

/// Waits and hands on events until the feed is gone or the wait fails `MAX_FAILURES` times in a
/// row; each new reason of a failure is said once. `pause` is the wait after a failure.
pub fn listen(w: &mut dyn Wait, sink: &Sink, pause: Duration) {
    let (mut failures, mut said) = (0u32, None::<String>);
    while !sink.stopped() {
        match w.wait(1_000) {
            Ok(Some(e)) => {
                failures = 0;
                if !sink.send(Report::Event(e)) {
                    return;
                }
            }
            Ok(None) => failures = 0,
            Err(e) => {
                failures += 1;
                let why = reason(&e);
                if failures >= MAX_FAILURES {
                    sink.send(Report::Notice(format!(
                        "GPU events no longer heard: NVML's event wait failed {failures} times in a row ({why})"
                    )));
                    return;
                }
                if said.as_deref() != Some(why.as_str()) {
                    sink.send(Report::Notice(format!(
                        "NVML's event wait failed ({why}); gpumon keeps listening"
                    )));
                    said = Some(why);
                }
                std::thread::sleep(pause);
            }
        }
    }
}

/// The real source: the live source's NVML session (`NvmlReader::session`), every GPU
/// registered for `WANTED`.
pub struct NvmlEvents {
    pub nvml: Arc<Nvml>,
}

impl EventSource for NvmlEvents {
    fn name(&self) -> &'static str {
        "gpumon-nvml-events"
    }

    fn run(self: Box<Self>, sink: &Sink) {
        let nvml = &*self.nvml;
        let set = match nvml.create_event_set() {
            Ok(s) => s,
            Err(e) => {
                sink.send(Report::Notice(format!(
                    "GPU events not heard: NVML could not create an event set ({})",
                    reason(&e)
                )));
                return;
            }
        };
        let (registered, refused) = register_all(nvml, &set);
        if !refused.is_empty() {
            let all = if registered == 0 { "" } else { " on some GPUs" };
            sink.send(Report::Notice(format!(
                "Xid and ECC events not heard{all}: {}",
                refused.join("; ")
            )));
        }
        if registered > 0 {
            listen(&mut RawWait { nvml, set }, sink, Duration::from_secs(1));
        }
    }
}

/// Registers every GPU for the wanted types it supports; the number registered, and why each
/// other GPU refused.
#[allow(unsafe_code)]
fn register_all(nvml: &Nvml, set: &EventSet<'_>) -> (u32, Vec<String>) {
    let (mut registered, mut refused) = (0, Vec::new());
    let count = match nvml.device_count() {
        Ok(n) => n,
        Err(e) => return (0, vec![reason(&e)]),
    };
    let register = |dev: &Device<'_>| -> Result<(), NvmlError> {
        let supported = nvml_sym(nvml.lib().nvmlDeviceGetSupportedEventTypes.as_ref())?;
        let register = nvml_sym(nvml.lib().nvmlDeviceRegisterEvents.as_ref())?;
        let mut types: u64 = 0;
        // SAFETY: both symbols come from the loaded library and are called with a device handle
        // of the same live session, a live `u64` to write, and the set's handle, which `set`
        // owns and keeps alive for this call.
        unsafe {
            nvml_try(supported(dev.handle(), &raw mut types))?;
            let mask = types & WANTED;
            if mask == 0 {
                return Err(NvmlError::NotSupported);
            }
            nvml_try(register(dev.handle(), mask, set.handle()))
        }
    };
    for i in 0..count {
        match nvml.device_by_index(i).and_then(|d| register(&d)) {
            Ok(()) => registered += 1,
            Err(NvmlError::NoPermission) => refused.push(format!(
                "GPU{i}: no permission to register for events (run as root, or outside the container)"
            )),
            Err(e) => refused.push(format!("GPU{i}: {}", reason(&e))),
        }
    }
    (registered, refused)
}

/// `nvmlEventSetWait_v2` on a set, its device handle named by UUID.
struct RawWait<'n> {
    nvml: &'n Nvml,
    set: EventSet<'n>,
}

impl Wait for RawWait<'_> {
    #[allow(unsafe_code)]
    fn wait(&mut self, timeout_ms: u32) -> Result<Option<GpuEvent>, NvmlError> {
        let sym = nvml_sym(self.nvml.lib().nvmlEventSetWait_v2.as_ref())?;
        // SAFETY: a zeroed `nvmlEventData_t` is a valid value (a null handle and zeros); the set's
        // handle is owned by `self.set` and alive; NVML writes one event into `data`.
        let data = unsafe {
            let mut data: nvmlEventData_t = std::mem::zeroed();
            match nvml_try(sym(self.set.handle(), &raw mut data, timeout_ms)) {
                Ok(()) => data,
                Err(NvmlError::Timeout) => return Ok(None),
                Err(e) => return Err(e),
            }
        };
        let uuid = if data.device.is_null() {
            None
        } else {
            // SAFETY: a handle NVML just gave for this session's device.
            unsafe { Device::new(data.device, self.nvml) }.uuid().ok()
        };
        let at_ms = crate::clock::unix_ms();
        Ok(event_of(data.eventType, data.eventData, uuid, at_ms))
    }
}

#[cfg(test)]
mod tests;
