//! CUDA's memory faults that are not OOMs, in each framework's wording: an illegal or misaligned
//! address, an uncorrectable ECC error, an unspecified launch failure, a device-side assert, and
//! NCCL's wrapping of them (`Cuda failure 'an illegal memory access was encountered'`).

use std::sync::LazyLock;

use regex_lite::Regex;

use super::{Event, Family, Kind, re};
use crate::oom::failure::{Dialect, FaultKind, Numbers};

static FAULT: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?P<ill>an illegal memory access was encountered|cudaErrorIllegalAddress|CUDA_ERROR_ILLEGAL_ADDRESS)",
        r"|(?P<mis>CUDA error: misaligned address|cudaErrorMisalignedAddress|CUDA_ERROR_MISALIGNED_ADDRESS|Cuda failure 'misaligned address')",
        r"|(?P<ecc>uncorrectable ECC error encountered|cudaErrorECCUncorrectable|CUDA_ERROR_ECC_UNCORRECTABLE)",
        r"|(?P<launch>unspecified launch failure|cudaErrorLaunchFailure|CUDA_ERROR_LAUNCH_FAILED)",
        r"|(?P<assert>device-side assert triggered|cudaErrorAssert\b|CUDA_ERROR_ASSERT\b)",
    ))
});

/// A word every wording has (ASCII, any case).
static WORDS: super::screen::Screen =
    super::screen::Screen::new(&["illegal", "misaligned", "ecc", "launch", "assert"], true);

/// Whether a line may hold a fault: a plain scan for a word every wording has.
fn worth_parsing(text: &str) -> bool {
    WORDS.holds(text)
}

/// The framework whose wording a fault line is, from the words around it.
fn dialect(line: &str) -> Dialect {
    let has = |w: &str| line.contains(w);
    if has("NCCL") || has("nccl") || has("Cuda failure") {
        Dialect::Nccl
    } else if has("cupy") || has("CuPy") {
        Dialect::Cupy
    } else if has("tensorflow") || has("InternalError") {
        Dialect::Tensorflow
    } else if has("XlaRuntimeError")
        || has("JaxRuntimeError")
        || has("jax")
        || has("xla")
        || has("pjrt")
    {
        Dialect::Jax
    } else if has("torch") || has("c10::") || (has("CUDA error: ") && !has("CUDA_ERROR_")) {
        Dialect::Pytorch
    } else {
        Dialect::Cuda
    }
}

pub(super) fn parse(line: &str) -> Option<Event> {
    if !worth_parsing(line) {
        return None;
    }
    let c = FAULT.captures(line)?;
    let kind = if c.name("ill").is_some() {
        FaultKind::IllegalAddress
    } else if c.name("mis").is_some() {
        FaultKind::MisalignedAddress
    } else if c.name("ecc").is_some() {
        FaultKind::UncorrectableEcc
    } else if c.name("launch").is_some() {
        FaultKind::LaunchFailure
    } else {
        FaultKind::DeviceAssert
    };
    let at = c.get(0).map_or(0, |m| m.start());
    // The error's own text: from the exception's name (`torch.AcceleratorError: …`) where it is
    // on the line, else from the end of a log prefix (`E1124 … cuda_executor.cc:12]`).
    let start = line
        .get(..at)
        .map_or(0, |head| head.rfind([']', '>']).map_or(0, |i| i + 1));
    Some(Event {
        kind: Kind::Complete,
        family: Family::Fault,
        dialect: dialect(line),
        allocator: None,
        numbers: Numbers::default(),
        start,
        key: Some(kind.as_str().to_string()),
        fault: Some(kind),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(l: &str) -> Option<(FaultKind, Dialect)> {
        parse(l).map(|e| (e.fault.unwrap(), e.dialect))
    }

    #[test]
    fn each_frameworks_wording() {
        use Dialect::*;
        use FaultKind::*;
        for (line, want) in [
            // torch 2.11 on an H100 (shared/reference/oom-formats-and-nvml.md).
            (
                "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
                (IllegalAddress, Pytorch),
            ),
            (
                "torch.AcceleratorError: CUDA error: device-side assert triggered",
                (DeviceAssert, Pytorch),
            ),
            (
                "RuntimeError: CUDA error: misaligned address",
                (MisalignedAddress, Pytorch),
            ),
            (
                "RuntimeError: CUDA error: uncorrectable ECC error encountered",
                (UncorrectableEcc, Pytorch),
            ),
            (
                "RuntimeError: CUDA error: unspecified launch failure",
                (LaunchFailure, Pytorch),
            ),
            // cupy 14.2 on an H100.
            (
                "cupy_backends.cuda.api.driver.CUDADriverError: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered",
                (IllegalAddress, Cupy),
            ),
            (
                "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorMisalignedAddress: misaligned address",
                (MisalignedAddress, Cupy),
            ),
            (
                "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to execute XLA Runtime executable: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered",
                (IllegalAddress, Jax),
            ),
            (
                "E1124 03:12:07.000 123 stream_executor_pimpl.cc:1] jax: CUDA_ERROR_ECC_UNCORRECTABLE: uncorrectable ECC error encountered",
                (UncorrectableEcc, Jax),
            ),
            (
                "tensorflow.python.framework.errors_impl.InternalError: CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure",
                (LaunchFailure, Tensorflow),
            ),
            (
                "gpu-07:4121:4180 [2] NCCL WARN Cuda failure 'an illegal memory access was encountered'",
                (IllegalAddress, Nccl),
            ),
            (
                "Cuda failure 'misaligned address'",
                (MisalignedAddress, Nccl),
            ),
            ("CUDA_ERROR_ILLEGAL_ADDRESS", (IllegalAddress, Cuda)),
        ] {
            assert_eq!(kind(line), Some(want), "{line}");
        }
    }

    #[test]
    fn hints_and_unrelated_lines_are_not_faults() {
        for l in [
            "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
            "AssertionError: expected 3 got 4",
            "ECC mode is on",
            "the address is misaligned by 4 bytes",
            "an illegal memory acc",
        ] {
            assert!(parse(l).is_none(), "{l}");
        }
    }

    #[test]
    fn the_message_starts_at_the_error() {
        let l = "E1124 03:12:07.000 123 cuda_executor.cc:1] CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered";
        let e = parse(l).unwrap();
        assert!(
            l[e.start..]
                .trim()
                .starts_with("CUDA_ERROR_ILLEGAL_ADDRESS")
        );
    }
}
