//! What a replay (or the demo) refuses of the live screen's options, in one sentence each.

use std::path::PathBuf;
use std::time::Duration;

/// Why `--interval` cannot go with a replay: its samples keep the spacing they were recorded
/// with (`--speed` changes their pace). `None` when it was not given.
pub fn replay_interval_refused(interval: Option<Duration>) -> Option<String> {
    interval.map(|_| {
        "--interval sets how often the GPUs are read; a replay keeps the interval it was recorded at (--speed plays it faster or slower)".to_string()
    })
}

/// Why `--log` cannot go with a replay (or the demo): a log is followed while the GPUs are read
/// live; a recording holds the failures of the logs followed when it was made. `None` when no
/// log was given.
pub fn replay_log_refused(logs: &[PathBuf]) -> Option<String> {
    logs.first().map(|log| {
        format!(
            "--log {} follows a log while the GPUs are read live; a replay holds the failures its \
             recording's logs had (to read a log's failures: `gpumon explain {}`)",
            log.display(),
            log.display()
        )
    })
}
