//! A GPU's memory health through NVML (ECC mode, ECC error counters, remapped rows, retired
//! pages), read once per `period::HEALTH` and carried between reads. The calls' results go
//! through `convert`, a pure function tested with scripted results; each reading is n/a with its
//! reason where the GPU or driver has none.

use nvml_wrapper::Device;
use nvml_wrapper::enum_wrappers::device::{EccCounter, MemoryError, RetirementCause};
use nvml_wrapper::error::{NvmlError, nvml_sym, nvml_try};
use nvml_wrapper::structs::device::EccModeState;

use super::convert::reason;
use crate::clock::tick_times::time;
use crate::sample::Reading;
use crate::sample::health::{EccCount, EccMode, Health, RemappedRows, RetiredPages};
use crate::source::period::{self, Period};

/// Why ECC counters are n/a on a GPU with ECC off.
pub const ECC_OFF: &str = "ECC is off on this GPU";

/// What NVML answered to each health call of one GPU.
pub struct Calls {
    pub ecc_mode: Result<EccModeState, NvmlError>,
    /// (corrected, uncorrected) volatile, then aggregate.
    pub volatile: (Result<u64, NvmlError>, Result<u64, NvmlError>),
    pub aggregate: (Result<u64, NvmlError>, Result<u64, NvmlError>),
    /// (corrected, uncorrected, pending, failure) as `nvmlDeviceGetRemappedRows` gives them.
    pub remapped: Result<(u32, u32, u32, u32), NvmlError>,
    /// Pages retired for multiple single-bit errors, for a double-bit error; pending.
    pub retired: (
        Result<usize, NvmlError>,
        Result<usize, NvmlError>,
        Result<bool, NvmlError>,
    ),
}

/// The readings from one GPU's answers.
pub fn convert(c: Calls) -> Health {
    let ecc_off = matches!(&c.ecc_mode, Ok(m) if !m.currently_enabled);
    let why = |e: NvmlError| match e {
        NvmlError::NotSupported if ecc_off => ECC_OFF.to_string(),
        e => reason(&e),
    };
    let count = |(corrected, uncorrected): (Result<u64, NvmlError>, Result<u64, NvmlError>)| match (
        corrected,
        uncorrected,
    ) {
        (Ok(corrected), Ok(uncorrected)) => Reading::Value(EccCount {
            corrected,
            uncorrected,
        }),
        (Err(e), _) | (_, Err(e)) => Reading::Unavailable(why(e)),
    };
    let retired = match c.retired {
        (Ok(sbe), Ok(dbe), Ok(pending)) => Reading::Value(RetiredPages {
            single_bit: sbe as u64,
            double_bit: dbe as u64,
            pending,
        }),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => Reading::Unavailable(why(e)),
    };
    Health {
        ecc_mode: c.ecc_mode.map_or_else(
            |e| Reading::Unavailable(reason(&e)),
            |m| {
                Reading::Value(EccMode {
                    current: m.currently_enabled,
                    pending: m.pending_enabled,
                })
            },
        ),
        ecc_volatile: count(c.volatile),
        ecc_aggregate: count(c.aggregate),
        remapped_rows: c.remapped.map_or_else(
            |e| Reading::Unavailable(reason(&e)),
            |(corrected, uncorrected, pending, failure)| {
                Reading::Value(RemappedRows {
                    corrected: u64::from(corrected),
                    uncorrected: u64::from(uncorrected),
                    pending: pending != 0,
                    failure: failure != 0,
                })
            },
        ),
        retired_pages: retired,
    }
}

/// One GPU's health, read once per `period::HEALTH` and kept between reads.
pub struct Slow {
    period: Period,
    last: Option<Health>,
}

impl Default for Slow {
    fn default() -> Self {
        Slow {
            period: Period::new(period::HEALTH),
            last: None,
        }
    }
}

impl Slow {
    /// The health to report at `now_ms`: read from `dev` when due, else the last reading.
    pub fn get(&mut self, now_ms: u64, dev: &Device<'_>) -> Health {
        if self.last.is_none() || self.period.due(now_ms) {
            self.last = Some(time("nvml.health", || convert(calls(dev))));
        }
        self.last
            .clone()
            .unwrap_or_else(|| Health::unavailable("not read"))
    }
}

/// Asks NVML every health question about `dev`.
fn calls(dev: &Device<'_>) -> Calls {
    use EccCounter::{Aggregate, Volatile};
    use MemoryError::{Corrected, Uncorrected};
    let pages = |cause| dev.retired_pages(cause).map(|p| p.len());
    Calls {
        ecc_mode: dev.is_ecc_enabled(),
        volatile: (
            dev.total_ecc_errors(Corrected, Volatile),
            dev.total_ecc_errors(Uncorrected, Volatile),
        ),
        aggregate: (
            dev.total_ecc_errors(Corrected, Aggregate),
            dev.total_ecc_errors(Uncorrected, Aggregate),
        ),
        remapped: remapped_rows(dev),
        retired: (
            pages(RetirementCause::MultipleSingleBitEccErrors),
            pages(RetirementCause::DoubleBitEccError),
            dev.are_pages_pending_retired(),
        ),
    }
}

/// `nvmlDeviceGetRemappedRows`, which nvml-wrapper 0.13 does not wrap.
#[allow(unsafe_code)]
fn remapped_rows(dev: &Device<'_>) -> Result<(u32, u32, u32, u32), NvmlError> {
    let sym = nvml_sym(dev.nvml().lib().nvmlDeviceGetRemappedRows.as_ref())?;
    let (mut corrected, mut uncorrected, mut pending, mut failure) = (0u32, 0u32, 0u32, 0u32);
    // SAFETY: `sym` is `nvmlDeviceGetRemappedRows` from the loaded library, called with the valid
    // handle of a device of the same, still initialised, NVML session and four pointers to live,
    // writable `unsigned int`s, as its C signature takes.
    let code = unsafe {
        sym(
            dev.handle(),
            &raw mut corrected,
            &raw mut uncorrected,
            &raw mut pending,
            &raw mut failure,
        )
    };
    nvml_try(code)?;
    Ok((corrected, uncorrected, pending, failure))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> Calls {
        // What an H100 (driver 580) answered: ECC on, every counter 0, no page retirement.
        Calls {
            ecc_mode: Ok(EccModeState {
                currently_enabled: true,
                pending_enabled: true,
            }),
            volatile: (Ok(0), Ok(0)),
            aggregate: (Ok(0), Ok(0)),
            remapped: Ok((0, 0, 0, 0)),
            retired: (
                Err(NvmlError::NotSupported),
                Err(NvmlError::NotSupported),
                Err(NvmlError::NotSupported),
            ),
        }
    }

    #[test]
    fn zeros_are_values_and_a_missing_reading_says_why() {
        let h = convert(h100());
        assert_eq!(h.ecc_volatile, Reading::Value(EccCount::default()));
        assert_eq!(h.remapped_rows, Reading::Value(RemappedRows::default()));
        assert_eq!(h.retired_pages, Reading::na("not supported on this GPU"));
        assert_eq!(
            h.ecc_mode.value(),
            Some(&EccMode {
                current: true,
                pending: true
            })
        );
    }

    #[test]
    fn errors_remaps_and_a_counter_that_fails() {
        let h = convert(Calls {
            volatile: (Ok(12), Ok(2)),
            aggregate: (Ok(40), Err(NvmlError::Unknown)),
            remapped: Ok((3, 1, 1, 0)),
            retired: (Ok(2), Ok(1), Ok(true)),
            ..h100()
        });
        assert_eq!(
            h.ecc_volatile,
            Reading::Value(EccCount {
                corrected: 12,
                uncorrected: 2
            })
        );
        assert_eq!(h.ecc_aggregate, Reading::na("unknown driver error"));
        let rows = h.remapped_rows.value().unwrap();
        assert!(rows.pending && !rows.failure && rows.uncorrected == 1);
        assert_eq!(
            h.retired_pages.value(),
            Some(&RetiredPages {
                single_bit: 2,
                double_bit: 1,
                pending: true
            })
        );
    }

    #[test]
    fn counters_of_a_gpu_with_ecc_off_say_so() {
        let h = convert(Calls {
            ecc_mode: Ok(EccModeState {
                currently_enabled: false,
                pending_enabled: true,
            }),
            volatile: (Err(NvmlError::NotSupported), Err(NvmlError::NotSupported)),
            remapped: Err(NvmlError::NotSupported),
            ..h100()
        });
        assert_eq!(h.ecc_volatile, Reading::na(ECC_OFF));
        assert_eq!(h.remapped_rows, Reading::na("not supported on this GPU"));
    }
}
