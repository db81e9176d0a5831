//! `explain`'s job section in words: the sentences of a job with no rank seen failing first,
//! and the section as text within 80 columns.

use super::JobExplained;
use crate::analysis::job_failure::judge::{NoRoot, Who};
use crate::analysis::job_failure::words;
use crate::model::RankEvent;

/// With no rank seen failing first: the finding, its title and remedy.
pub(super) fn no_root_words(
    no_root: NoRoot,
    events: &[RankEvent],
    who: &[Who],
) -> (&'static str, String, &'static str) {
    match no_root {
        NoRoot::Timeout(i) => (
            "collective-timeout",
            format!(
                "{}, and no rank was seen failing or behind: a rank stuck or slow, not dead",
                words::words(&events[i], who[i], "", None)
            ),
            "Find the rank that never reached that collective: run with TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 so each rank dumps its collectives and says how far it got (gpumon reads that line and names the rank; torchfrtrace reads the dumps); raise the timeout only for work one rank legitimately does alone (a checkpoint, an evaluation).",
        ),
        NoRoot::PeerLost(i) => (
            "peer-lost",
            format!(
                "{}, and no rank was seen failing: the failed rank's output is not among these logs",
                words::words(&events[i], who[i], "", None)
            ),
            "Read the other ranks' output (another node's, perhaps) for the first failure; if none failed, check the network between them (NCCL_DEBUG=INFO).",
        ),
        NoRoot::Stopped => (
            "rank-stopped",
            "ranks ended, and no rank was seen failing first".to_string(),
            "Read the ranks' own output and the launcher's for the first failure.",
        ),
    }
}

/// The section as text, within `explain`'s 80 columns.
pub fn text(job: &JobExplained, logs: usize, wrap: impl Fn(&str, &str, &str) -> String) -> String {
    let _ = logs;
    let mut out = wrap(&format!("job failure: {}", job.title), "", "  ");
    out.push_str(&wrap(&job.read_together, "  read: ", "    "));
    if let Some(r) = &job.root {
        let head = match job.finding.as_str() {
            "common-cause" => "  each of its own: ",
            _ => "  root cause: ",
        };
        out.push_str(&wrap(&r.said.words, head, "    "));
    }
    let head = match job.finding.as_str() {
        "rank-stuck" => "  behind: ",
        "stopped-from-outside" => "  stopped: ",
        _ => "  ran on: ",
    };
    for s in &job.told {
        out.push_str(&wrap(&s.words, head, "    "));
    }
    for s in &job.named_by {
        out.push_str(&wrap(&s.words, "  - ", "    "));
    }
    for s in &job.consequences {
        out.push_str(&wrap(&s.words, "  - ", "    "));
    }
    out.push_str(&wrap(&job.remedy, "  remedy: ", "    "));
    out
}
