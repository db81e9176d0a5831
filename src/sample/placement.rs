//! Where a process runs: the container, Kubernetes pod, Slurm job or systemd service of its
//! cgroup, and its PID inside its own PID namespace.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// For the table, the filter and metric labels (`k8s:3f2a1b4c/4b6f2c8e1a3`, `slurm:48211.0`,
    /// `docker:9c1e…`); empty when the process is in none of them (a plain session).
    pub short: String,
    /// The full ids, for snapshots and the detail pane; empty when in none.
    pub full: String,
    /// The PID as the process itself sees it, when it runs in a nested PID namespace.
    pub namespace_pid: Option<u32>,
}
