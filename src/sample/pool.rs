//! What the allocator probe read inside a process: one framework's memory pool on one GPU.
//!
//! Every figure is the framework's own, in bytes, exactly as its statistics call returned it;
//! `None` means the framework does not report that figure (JAX has no stranded bytes, CuPy no
//! peaks, PyTorch a largest free block only when the probe could measure it cheaply).

use serde::{Deserialize, Serialize};

use super::Framework;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pool {
    pub framework: Framework,
    pub version: Option<String>,
    /// When the probe read the figures, milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// Bytes in live tensors/buffers.
    pub allocated: Option<u64>,
    /// Bytes the pool holds from CUDA.
    pub reserved: Option<u64>,
    /// The pool's free part: reserved − allocated.
    pub cached_free: Option<u64>,
    /// Free bytes stuck in partly used blocks (PyTorch's inactive split bytes): not releasable.
    pub stranded: Option<u64>,
    pub largest_free_block: Option<u64>,
    /// The largest single allocation the framework has seen (JAX).
    pub largest_alloc: Option<u64>,
    /// The pool's cap (JAX `bytes_limit`, a CuPy limit, a PyTorch per-process fraction).
    pub limit: Option<u64>,
    pub peak_allocated: Option<u64>,
    pub peak_reserved: Option<u64>,
    /// cudaMalloc failures the allocator recovered from by flushing its cache (PyTorch).
    pub alloc_retries: Option<u64>,
    /// Out-of-memory errors the framework raised (PyTorch).
    pub ooms: Option<u64>,
}

impl Pool {
    /// The free part of the pool that cannot be returned to the GPU: the stranded bytes where
    /// the framework reports them, else all of its cached free bytes.
    pub fn unusable_free(&self) -> Option<u64> {
        self.stranded.or(self.cached_free)
    }

    /// Cached bytes the process could give back to the GPU while it runs
    /// (`torch.cuda.empty_cache()`, CuPy's `free_all_blocks()`): cached free minus what is
    /// stranded in split blocks. A BFC pool (JAX, TensorFlow) never returns its regions at run
    /// time: nothing of it is releasable, however little is in use.
    pub fn releasable(&self) -> Option<u64> {
        if self.framework.keeps_its_pool() {
            return self.cached_free.map(|_| 0);
        }
        self.reusable()
    }

    /// Cached bytes the process itself can allocate from again: cached free minus what is
    /// stranded in split blocks.
    pub fn reusable(&self) -> Option<u64> {
        let free = self.cached_free?;
        Some(free.saturating_sub(self.stranded.unwrap_or(0)))
    }
}
