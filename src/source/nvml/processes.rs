//! A GPU's process lists in one driver call each: nvml-wrapper asks the driver for the count and
//! then for the list (two calls a list a GPU a tick; the count alone cost 50 µs of the list's
//! 126 µs on an H100); here the list is asked for at once into a buffer sized from the longest
//! list seen, and again, larger, only when the driver says it did not fit.

use nvml_wrapper::Device;
use nvml_wrapper::error::{NvmlError, nvml_sym, nvml_try};
use nvml_wrapper::struct_wrappers::device::ProcessInfo;
use nvml_wrapper_sys::bindings::{
    nvmlProcessInfo_t, nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE, nvmlReturn_t,
};

/// The smallest buffer, in entries.
pub const MIN_CAP: u32 = 16;
/// Room left past the longest list seen (processes starting between two ticks).
const HEADROOM: u32 = 8;
/// Calls a list at most (each after the driver said the buffer was too small).
const TRIES: usize = 3;

const EMPTY: nvmlProcessInfo_t = nvmlProcessInfo_t {
    pid: 0,
    usedGpuMemory: 0,
    gpuInstanceId: 0,
    computeInstanceId: 0,
};

/// The list `call` gives (the driver's form: the buffer's length in, the entries written or
/// needed out), with a buffer of `*cap` entries, grown and asked again while the driver says it
/// is too small; `*cap` keeps the size for the next call.
pub fn list(
    cap: &mut u32,
    mut call: impl FnMut(&mut u32, &mut [nvmlProcessInfo_t]) -> nvmlReturn_t,
) -> Result<Vec<ProcessInfo>, NvmlError> {
    let mut code = nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE;
    for _ in 0..TRIES {
        *cap = (*cap).max(MIN_CAP);
        let mut buf = vec![EMPTY; *cap as usize];
        let mut count = *cap;
        code = call(&mut count, &mut buf);
        if code == nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE {
            *cap = count.max(*cap).saturating_add(HEADROOM);
            continue;
        }
        nvml_try(code)?;
        buf.truncate(count.min(*cap) as usize);
        *cap = (*cap).max(count.saturating_add(HEADROOM));
        return Ok(buf.into_iter().map(ProcessInfo::from).collect());
    }
    nvml_try(code).map(|()| Vec::new())
}

/// `dev`'s compute processes (`nvmlDeviceGetComputeRunningProcesses_v3`).
#[allow(unsafe_code)]
pub fn compute(dev: &Device<'_>, cap: &mut u32) -> Result<Vec<ProcessInfo>, NvmlError> {
    let sym = nvml_sym(
        dev.nvml()
            .lib()
            .nvmlDeviceGetComputeRunningProcesses_v3
            .as_ref(),
    )?;
    // SAFETY: `sym` is the symbol of the loaded library, called with the valid handle of a
    // device of the same, still initialised, NVML session, a count equal to the buffer's length
    // (`list` passes both) and a pointer to that many live, writable `nvmlProcessInfo_t`.
    list(cap, |count, buf| unsafe {
        sym(dev.handle(), count, buf.as_mut_ptr())
    })
}

/// `dev`'s graphics processes (`nvmlDeviceGetGraphicsRunningProcesses_v3`).
#[allow(unsafe_code)]
pub fn graphics(dev: &Device<'_>, cap: &mut u32) -> Result<Vec<ProcessInfo>, NvmlError> {
    let sym = nvml_sym(
        dev.nvml()
            .lib()
            .nvmlDeviceGetGraphicsRunningProcesses_v3
            .as_ref(),
    )?;
    // SAFETY: as in `compute`.
    list(cap, |count, buf| unsafe {
        sym(dev.handle(), count, buf.as_mut_ptr())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvml_wrapper_sys::bindings::{
        nvmlReturn_enum_NVML_ERROR_NO_PERMISSION, nvmlReturn_enum_NVML_SUCCESS,
    };

    /// A driver with `n` processes: fills what fits, or says how many it needs.
    fn driver(
        n: u32,
        calls: &mut Vec<u32>,
    ) -> impl FnMut(&mut u32, &mut [nvmlProcessInfo_t]) -> nvmlReturn_t {
        move |count, buf| {
            calls.push(*count);
            assert_eq!(
                *count as usize,
                buf.len(),
                "the count given is the buffer's length"
            );
            if n > *count {
                *count = n;
                return nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE;
            }
            for (i, e) in buf.iter_mut().take(n as usize).enumerate() {
                e.pid = 100 + i as u32;
                e.usedGpuMemory = 1 << 20;
                e.gpuInstanceId = u32::MAX;
                e.computeInstanceId = u32::MAX;
            }
            *count = n;
            nvmlReturn_enum_NVML_SUCCESS
        }
    }

    #[test]
    fn a_list_that_fits_is_one_call_and_a_longer_one_grows_the_buffer_for_next_time() {
        let mut cap = 0;
        let mut calls = Vec::new();
        let l = list(&mut cap, driver(3, &mut calls)).unwrap();
        assert_eq!(l.iter().map(|p| p.pid).collect::<Vec<_>>(), [100, 101, 102]);
        assert_eq!(
            (l[0].gpu_instance_id, l[0].compute_instance_id),
            (None, None)
        );
        assert_eq!(calls, [MIN_CAP], "one call");
        let mut calls = Vec::new();
        assert_eq!(list(&mut cap, driver(40, &mut calls)).unwrap().len(), 40);
        assert_eq!(calls, [MIN_CAP, 48], "too small: asked again with room");
        let mut calls = Vec::new();
        assert_eq!(list(&mut cap, driver(41, &mut calls)).unwrap().len(), 41);
        assert_eq!(calls, [48], "the next tick's list fits at once");
        let mut calls = Vec::new();
        assert!(list(&mut cap, driver(0, &mut calls)).unwrap().is_empty());
    }

    #[test]
    fn an_error_is_the_drivers_and_a_list_that_keeps_growing_is_bounded() {
        let mut cap = 0;
        let refused = list(&mut cap, |_, _| nvmlReturn_enum_NVML_ERROR_NO_PERMISSION);
        assert!(matches!(refused, Err(NvmlError::NoPermission)));
        let mut calls = 0;
        let growing = list(&mut cap, |count, _| {
            calls += 1;
            *count += 100;
            nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE
        });
        assert!(matches!(growing, Err(NvmlError::InsufficientSize(_))));
        assert_eq!(calls, TRIES);
    }
}
