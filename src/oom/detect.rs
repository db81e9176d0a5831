//! Which wording a log line is: a plain scan for the phrases one of which every wording holds,
//! then each dialect's parser in turn (the patterns run only on lines that may be a failure, and
//! read it with its long runs of digits collapsed, `runs.rs`).

use super::runs::Collapsed;
use super::screen::Screen;
use super::{Event, cuda, cupy, fault, jax, nccl, pytorch, tensorflow};

/// Every wording has one of these words (ASCII, any case).
static WORDS: Screen = Screen::new(&["memory", "alloc", "oom"], true);

/// Whether a line is worth handing to the parsers: a plain scan, as it runs on every line a job
/// prints.
pub(super) fn worth_parsing(text: &str) -> bool {
    WORDS.holds(text)
}

/// What a line (`body`, `runs` its collapsed form) says: a failure of some wording, or a memory
/// fault; its start and the fields that held a run told of the line as written.
pub(super) fn event(body: &str, runs: &Collapsed) -> Option<Event> {
    let text = &*runs.text;
    if worth_parsing(body) {
        detect(text)
    } else {
        None
    }
    .or_else(|| fault::parse(text))
    .map(|e| runs.restore(e))
}

/// Phrases one of which every wording `detect`'s parsers read holds (each parser's patterns need
/// one: PyTorch's `Tried to allocate` or `out of memory`, XLA's `ran out of memory trying to
/// allocate`, TensorFlow's `OOM when allocating tensor`, JAX's `memory while trying to allocate`
/// and `Failed to allocate request for`, CuPy's `Out of memory allocating`, NCCL's `Cuda failure`
/// and `NCCL WARN Failed to CUDA`, CUDA's error names, the async allocator's `failed to
/// allocate`). A plain scan before any pattern: a job's own lines may say "memory", "alloc" or
/// "oom" without being a failure (a JSON line of allocator figures a step: on 2 H200s its
/// patterns cost 60-78 µs a line, 12 ms of a 14 ms tick).
const PHRASES: [&str; 13] = [
    "Tried to allocate",
    "out of memory",
    "Out of memory",
    "ran out of memory trying to allocate",
    "OOM when allocating tensor",
    "memory while trying to allocate",
    "Failed to allocate request for",
    "failed to allocate",
    "Cuda failure",
    "NCCL WARN Failed to CUDA",
    "cudaErrorMemoryAllocation",
    "CUDA_ERROR_OUT_OF_MEMORY",
    "_STATUS_ALLOC_FAILED",
];

static PHRASE: Screen = Screen::new(&PHRASES, false);

pub(super) fn detect(text: &str) -> Option<Event> {
    if !PHRASE.holds(text) {
        return None;
    }
    tensorflow::header(text)
        .or_else(|| tensorflow::async_header(text))
        .or_else(|| pytorch::parse(text))
        .or_else(|| tensorflow::tensor(text))
        .or_else(|| jax::parse(text))
        .or_else(|| cupy::parse(text))
        .or_else(|| nccl::parse(text))
        .or_else(|| cuda::parse(text))
}
