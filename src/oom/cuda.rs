//! Raw CUDA runtime/driver/library allocation errors, minus pinned host memory and the
//! TF/XLA start-up back-off ladder.

use std::sync::LazyLock;

use regex_lite::Regex;

use super::sizes::parse_exact;
use super::{Event, Family, Kind, re};
use crate::oom::failure::{Dialect, Numbers};

static RAW: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY|CUDA error: out of memory|(?:CUBLAS|CUDNN)_STATUS_ALLOC_FAILED",
    )
});
/// Host memory, or the allocator's own retries (BFC backs off ×0.9 and reports a real failure itself).
static NOT_GPU: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)cudaMallocHost|cudaHostAlloc|cuMemHostAlloc|on host|pinned|host memory|failed to allocate \S+ \(\d+ bytes\) from device|failed to allocate device memory of \S+ \(\d+ bytes\)",
    )
});
static BYTES: LazyLock<Regex> = LazyLock::new(|| re(r"(?P<n>\d{1,20}) bytes"));

pub(super) fn parse(line: &str) -> Option<Event> {
    let m = RAW.find(line)?;
    if NOT_GPU.is_match(line) {
        return None;
    }
    let request = BYTES.captures(line).and_then(|c| parse_exact(&c["n"]));
    let start = line
        .get(..m.start())
        .map_or(0, |head| head.rfind([']', '>']).map_or(0, |i| i + 1));
    Some(Event {
        kind: Kind::Raw,
        family: Family::Raw,
        dialect: Dialect::Cuda,
        allocator: None,
        numbers: Numbers {
            request,
            ..Numbers::default()
        },
        start,
        key: Some(m.as_str().to_string()),
        fault: None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::sizes::Size;
    use super::*;

    #[test]
    fn raw_errors() {
        for l in [
            "std::bad_alloc: cudaErrorMemoryAllocation: out of memory",
            "CUDA_ERROR_OUT_OF_MEMORY: out of memory",
            "RuntimeError: CUDA error: out of memory",
            "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
            "cuDNN error: CUDNN_STATUS_ALLOC_FAILED",
        ] {
            assert!(parse(l).is_some(), "{l}");
        }
        let b = parse("cuMemAlloc of 1048576 bytes failed: CUDA_ERROR_OUT_OF_MEMORY").unwrap();
        assert_eq!(b.numbers.request, Some(Size::exact(1_048_576)));
    }

    #[test]
    fn host_and_ladder_are_ignored() {
        for l in [
            "cudaMallocHost failed: cudaErrorMemoryAllocation: out of memory",
            "failed to alloc 2097152 bytes on host: CUDA_ERROR_OUT_OF_MEMORY: out of memory",
            "I tensorflow/stream_executor/cuda/cuda_driver.cc:775] failed to allocate 256.00M (268435456 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory",
            "failed to allocate 11.00G (11811160064 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY",
            // XLA (jax 0.11) growing a BFC region: 4.00, 3.60, 3.24 GiB, ... (real log).
            "E1122 04:52:42.225663     552 cuda_executor.cc:1365] [0] Failed to allocate device memory of 4.00GiB (4294967296 bytes): RESOURCE_EXHAUSTED: : CUDA_ERROR_OUT_OF_MEMORY: out of memory",
        ] {
            assert!(parse(l).is_none(), "{l}");
        }
    }
}
