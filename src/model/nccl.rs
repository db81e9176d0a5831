//! What NCCL's communicators hold outside a framework's pool, as measured once elsewhere: the
//! one place for the reference figures, which the detail pane (and any text form) reads, labelled
//! as a reference (they are not this process's), so a re-measurement changes them once.

use super::units;

const MIB: u64 = 1 << 20;

/// One measured step of a rank's life with NCCL and what it added to its device memory, all of
/// it outside the framework's pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// What happened, as the sentence names it: "init", "the first all_reduce".
    pub when: &'static str,
    pub bytes: u64,
}

/// Where and how the figures were measured.
pub const MEASURED_ON: &str = "2 H100s, torch 2.11, NVLS off";

/// What each step added, in the order they came. Measured on 2 H100s (NVLink NV18), torch 2.11
/// with the NCCL of its wheel, NVLS off (`NCCL_NVLS_ENABLE=0`), one rank a GPU, PyTorch's pool
/// holding 20 MiB throughout, each rank's device memory read from `nvidia-smi` per process: 630
/// MiB with its CUDA context and a 4 MiB tensor, then after `init_process_group("nccl",
/// device_id=…)`, the first `all_reduce` and the first `all_to_all` 1002, 1476 and 1922 MiB
/// (`scripts/gpu/nccl_memory.sh` measures them again). NCCL sizes its buffers by channels and
/// peers (`NCCL_BUFFSIZE`, 4 MiB a channel a peer by default) and each collective kind's on its
/// first use, so other GPU counts, links and NVLS give other figures (8 H100s: over 4 GB a GPU
/// after the first all_to_all, NVIDIA/nccl#1685).
pub const STEPS: [Step; 3] = [
    Step {
        when: "init",
        bytes: 372 * MIB,
    },
    Step {
        when: "the first all_reduce",
        bytes: 474 * MIB,
    },
    Step {
        when: "the first all_to_all",
        bytes: 446 * MIB,
    },
];

/// What the measured steps add together (1292 MiB).
pub fn total() -> u64 {
    STEPS.iter().map(|s| s.bytes).sum()
}

/// "NCCL outside the pool, a reference measured elsewhere (2 H100s, torch 2.11, NVLS off), not
/// this process: +372M at init, +474M at the first all_reduce, +446M at the first all_to_all,
/// 1.3G in all": what NCCL may hold of a rank's memory outside the pool, labelled as the
/// reference it is (gpumon does not measure it per process).
pub fn reference_text() -> String {
    let steps: Vec<String> = STEPS
        .iter()
        .map(|s| format!("+{} at {}", units::compact(s.bytes), s.when))
        .collect();
    format!(
        "NCCL outside the pool, a reference measured elsewhere ({MEASURED_ON}), not this \
         process: {}, {} in all",
        steps.join(", "),
        units::compact(total())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_measured_steps_say_their_figures_once() {
        assert_eq!(total(), 1292 * MIB);
        assert_eq!(
            reference_text(),
            "NCCL outside the pool, a reference measured elsewhere (2 H100s, torch 2.11, NVLS \
             off), not this process: +372M at init, +474M at the first all_reduce, +446M at the \
             first all_to_all, 1.3G in all"
        );
        // 630 MiB before NCCL, 1922 MiB after the first all_to_all, as measured.
        assert_eq!(630 + total() / MIB, 1922);
    }
}
