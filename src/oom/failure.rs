//! An allocation failure parsed from a log (the OOM parsers produce these; recordings keep them).
//!
//! Fields added after the first recording format are optional in JSON, so older recordings
//! still read and a failure without numbers serializes exactly as before.

use serde::{Deserialize, Serialize};

pub use crate::oom::sizes::Size;

/// One allocation failure as read from a log (or, with `dist`, a distributed job's event).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// When it happened, milliseconds since the epoch: when gpumon read its line, unless
    /// `timing` says otherwise (the line's own time, or when its line was on disk).
    pub at_ms: u64,
    /// The log it came from.
    pub log: String,
    /// Line number in that log.
    pub line: u64,
    /// The process whose output the log is, when known.
    pub pid: Option<u32>,
    /// The failure's first line, capped in length.
    pub message: String,
    /// Which framework's wording it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Dialect>,
    /// The allocator that failed, when the wording says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocator: Option<Allocator>,
    /// The numbers the message printed.
    #[serde(default, skip_serializing_if = "Numbers::is_empty")]
    pub numbers: Numbers,
    /// A memory fault that is not an OOM (an illegal address, an ECC error, …); `None` for an OOM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<FaultKind>,
    /// The rank it is about: the line's `[rankN]:` prefix (the global rank), or the event's own
    /// words (`[Rank N]` in a watchdog's line, `rank : N` in torchrun's summary, srun's task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// The local rank (on its node) a `[defaultN]:` prefix or a launcher's line names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_rank: Option<u32>,
    /// The line's rank prefix as printed (`[rank0]:`), kept to say why a prefix was not
    /// believed (a number too large to be a rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// A distributed job's event: a watchdog timeout, NCCL's error, a launcher's word on a rank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dist: Option<crate::oom::dist::Dist>,
    /// How `at_ms` was known when it is not the moment gpumon read the line (a followed log's
    /// line with a time of its own, or one read while its log was behind); absent otherwise and
    /// in older recordings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<Timing>,
}

/// A failure's time when it is not the moment its line was read (`Failure::timing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timing {
    /// When gpumon read the line, milliseconds since the epoch.
    pub read_ms: u64,
    /// What `at_ms` is.
    pub from: TimeFrom,
    /// Bytes of the log past the line when it was read: how far behind its writer gpumon was.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub behind_bytes: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Where a failure's time comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeFrom {
    /// The time its line starts with, believed: between when the log was last seen without the
    /// line (10 minutes of slack for a buffered writer) and when it was seen with it.
    Line,
    /// The line has no time of its own (or none to believe): when gpumon first saw it on disk,
    /// the latest it can have been written.
    OnDisk,
}

/// A delay worth a word: the failure is told as read this much after it happened.
pub const LATE_MS: u64 = 2_000;

impl Failure {
    /// Whether the line is XLA's BFC allocator warning (`Allocator (GPU_2_bfc) ran out of memory
    /// trying to allocate 96.00MiB …`): logged when an allocation fails, before anything is
    /// raised. JAX raises only when the failed result is read, so a job may run on after it.
    pub fn is_allocator_warning(&self) -> bool {
        self.dist.is_none()
            && self.fault.is_none()
            && matches!(self.source, Some(Dialect::Tensorflow | Dialect::Jax))
            && self
                .message
                .contains("ran out of memory trying to allocate")
    }
}

/// What CUDA said went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// `cudaErrorIllegalAddress` (700): a kernel touched memory it does not own.
    IllegalAddress,
    /// `cudaErrorMisalignedAddress` (716).
    MisalignedAddress,
    /// `cudaErrorECCUncorrectable` (214): the GPU's memory failed.
    UncorrectableEcc,
    /// `cudaErrorLaunchFailure` (719): a kernel died (often a bad pointer).
    LaunchFailure,
    /// `cudaErrorAssert` (710): an assert in a kernel (often an index out of range).
    DeviceAssert,
}

impl FaultKind {
    /// The class name alerts and `explain` use.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::IllegalAddress => "illegal-address",
            FaultKind::MisalignedAddress => "misaligned-address",
            FaultKind::UncorrectableEcc => "uncorrectable-ecc",
            FaultKind::LaunchFailure => "launch-failure",
            FaultKind::DeviceAssert => "device-assert",
        }
    }

    /// In words, as a sentence's object ("died of …").
    pub fn words(self) -> &'static str {
        match self {
            FaultKind::IllegalAddress => "an illegal memory access",
            FaultKind::MisalignedAddress => "a misaligned memory access",
            FaultKind::UncorrectableEcc => "an uncorrectable ECC error",
            FaultKind::LaunchFailure => "an unspecified launch failure",
            FaultKind::DeviceAssert => "a device-side assert",
        }
    }
}

/// The framework whose message it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dialect {
    Pytorch,
    Tensorflow,
    Jax,
    Cupy,
    /// A raw CUDA runtime/driver/library error.
    Cuda,
    /// NCCL's wrapping of a CUDA error.
    Nccl,
}

impl Dialect {
    pub fn label(self) -> &'static str {
        match self {
            Dialect::Pytorch => "PyTorch",
            Dialect::Tensorflow => "TensorFlow",
            Dialect::Jax => "JAX",
            Dialect::Cupy => "CuPy",
            Dialect::Cuda => "CUDA",
            Dialect::Nccl => "NCCL",
        }
    }
}

/// The allocator that refused, which decides how the numbers are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Allocator {
    /// PyTorch's CUDA caching allocator.
    Caching,
    /// TensorFlow/XLA best-fit-with-coalescing pool.
    Bfc,
    /// CUDA's stream-ordered pool (`TF_GPU_ALLOCATOR=cuda_malloc_async`).
    CudaAsync,
    /// CuPy's memory pool.
    CupyPool,
    /// XLA's plain stream-executor allocator (no pool).
    Platform,
}

/// Memory another process held, as a PyTorch message lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// `None` for "this process".
    pub pid: Option<u32>,
    pub used: Size,
}

/// What a failure message printed; every field is optional (messages differ and get truncated).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Numbers {
    /// What the allocator asked for (PyTorch: the segment size; TF: the rounded request).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<Size>,
    /// The request as printed when it is no readable size (negative, not a number, or past
    /// 16 EiB): the code that asked computed it wrong; `request` is then absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_unreadable: Option<String>,
    /// The device ordinal inside the process (after `CUDA_VISIBLE_DEVICES`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<u32>,
    /// Device total memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<Size>,
    /// Device free memory at the failure (cudaMemGetInfo).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub free: Option<Size>,
    /// PyTorch: allocated by PyTorch (incl. private pools in the current wording).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocated: Option<Size>,
    /// PyTorch: allocated in private pools (CUDA Graphs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub private_pools: Option<Size>,
    /// PyTorch: reserved by PyTorch but unallocated (cache slack).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached: Option<Size>,
    /// PyTorch (older wordings): reserved in total.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reserved: Option<Size>,
    /// PyTorch: the per-process fraction in force.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Size>,
    /// PyTorch: processes on the GPU and their memory.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub holders: Vec<Holder>,
    /// Pool size (TF "Total bytes in pool"/"pool size"; CuPy "allocated so far").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<Size>,
    /// Pool limit (TF `memory_limit_`/`Limit`; CuPy "limit set to").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_limit: Option<Size>,
    /// Bytes in use in the pool (TF `InUse`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_use: Option<Size>,
    /// Free bytes in the pool, when printed directly (XLA).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_free: Option<Size>,
    /// The largest free chunk in the pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub largest_free: Option<Size>,
    /// TF: "shape[…] type" of the tensor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tensor: Option<String>,
    /// TF: the op that asked; XLA: the executable that ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    /// BFC: the pool's occupancy map (the `*___` line), when printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub occupancy: Option<Occupancy>,
}

/// What a BFC occupancy line shows: each character is a slice of the pool's regions,
/// `*` (or `x`, padding) in use, `_` free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Occupancy {
    /// Percent of the map in use.
    pub used_pct: u8,
    /// Percent of the map free.
    pub free_pct: u8,
    /// Separate free stretches: 1 means the free memory is one block.
    pub free_runs: u32,
}

impl Occupancy {
    /// Reads a map like `****__` (at least 20 characters of `*`, `x` and `_`).
    pub fn read(map: &str) -> Option<Occupancy> {
        let map = map.trim();
        let len = map.chars().count();
        if len < 20 || !map.chars().all(|c| matches!(c, '*' | 'x' | '_')) {
            return None;
        }
        let free = map.chars().filter(|c| *c == '_').count();
        let free_runs = map.split(['*', 'x']).filter(|run| !run.is_empty()).count();
        let used_pct = u8::try_from(((len - free) * 100 + len / 2) / len).unwrap_or(100);
        Some(Occupancy {
            used_pct,
            free_pct: 100 - used_pct,
            free_runs: u32::try_from(free_runs).unwrap_or(u32::MAX),
        })
    }
}

impl Numbers {
    pub fn is_empty(&self) -> bool {
        *self == Numbers::default()
    }

    /// Fills what `self` lacks from `o` (a later line of the same failure).
    pub fn fill_from(&mut self, o: Numbers) {
        fn fill<T>(a: &mut Option<T>, b: Option<T>) {
            if a.is_none() {
                *a = b;
            }
        }
        fill(&mut self.request, o.request);
        if self.request.is_none() {
            fill(&mut self.request_unreadable, o.request_unreadable);
        }
        fill(&mut self.device, o.device);
        fill(&mut self.total, o.total);
        fill(&mut self.free, o.free);
        fill(&mut self.allocated, o.allocated);
        fill(&mut self.private_pools, o.private_pools);
        fill(&mut self.cached, o.cached);
        fill(&mut self.reserved, o.reserved);
        fill(&mut self.allowed, o.allowed);
        fill(&mut self.pool, o.pool);
        fill(&mut self.pool_limit, o.pool_limit);
        fill(&mut self.in_use, o.in_use);
        fill(&mut self.pool_free, o.pool_free);
        fill(&mut self.largest_free, o.largest_free);
        fill(&mut self.tensor, o.tensor);
        fill(&mut self.op, o.op);
        fill(&mut self.occupancy, o.occupancy);
        if self.holders.is_empty() {
            self.holders = o.holders;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_without_numbers_is_unchanged() {
        let f = Failure {
            at_ms: 1,
            log: "a.log".into(),
            line: 2,
            pid: Some(3),
            message: "m".into(),
            source: None,
            allocator: None,
            numbers: Numbers::default(),
            fault: None,
            ..Failure::default()
        };
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(
            json,
            r#"{"at_ms":1,"log":"a.log","line":2,"pid":3,"message":"m"}"#
        );
        assert_eq!(serde_json::from_str::<Failure>(&json).unwrap(), f);
    }

    #[test]
    fn occupancy_maps() {
        let real = format!("{}{}", "*".repeat(71), "_".repeat(29));
        assert_eq!(
            Occupancy::read(&real),
            Some(Occupancy {
                used_pct: 71,
                free_pct: 29,
                free_runs: 1
            })
        );
        let holes = Occupancy::read("**_______***____*****_______xx___******").unwrap();
        assert_eq!(holes.free_runs, 4);
        assert_eq!(holes.used_pct + holes.free_pct, 100);
        assert_eq!(Occupancy::read("****"), None);
        assert_eq!(Occupancy::read("**********__________ab"), None);
    }
}
