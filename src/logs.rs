//! Following logs for allocation failures: `--log` files and GPU processes' own output files.

use crate::analysis::failure::Failure;

/// The logs being followed.
#[derive(Debug, Default)]
pub struct LogWatch {}

impl LogWatch {
    /// Follows these logs, and the GPU processes' own output files.
    pub fn new(_paths: Vec<std::path::PathBuf>) -> Self {
        LogWatch {}
    }

    /// New failures since the last poll; `pids` are the GPU processes seen this tick.
    pub fn poll(&mut self, _at_ms: u64, _pids: &[u32]) -> Vec<Failure> {
        Vec::new()
    }
}
