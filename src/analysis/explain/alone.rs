//! Each failure of the logs classified, and what a verdict from one log line cannot say by
//! itself: `explain` of a log has no history, so a fragmented cap may be a leak's, and XLA's
//! allocator warning may be a failure the job ran on after.

use super::kernel::{self, XidLine};
use super::{Explained, jobs};
use crate::analysis::classify::{Class, Confidence, classify};
use crate::analysis::context::Context;
use crate::analysis::remedy::remedy;
use crate::oom::failure::Failure;

/// What a verdict from one log line cannot rule out (issue 39): a cap that fragments is also
/// what a leak fills, so a line alone is never sure of fragmentation or a split; and XLA's
/// allocator warning with no exception after it in its log is a failure the job ran on after.
fn line_alone(
    class: &mut Class,
    confidence: &mut Confidence,
    evidence: &mut Vec<String>,
    ran_on: bool,
) {
    if matches!(class, Class::Fragmentation | Class::Split) && *confidence == Confidence::Certain {
        *confidence = Confidence::Likely;
        evidence.push("from this line alone a leak cannot be ruled out: memory kept from step to step fills a cap the same way; the run's recording (gpumon record) or its allocator probe tells them apart".into());
    }
    if ran_on {
        evidence.push("the job ran on after it: XLA's allocator logs this when an allocation fails, and JAX raises only when the failed result is read; no exception follows in this log".into());
    }
}

/// Each failure classified: a memory fault joined with an Xid line, an OOM by its numbers. A
/// distributed job's events are told in its section, not as allocation failures.
pub(super) fn explained(failures: Vec<Failure>, xids: &[XidLine]) -> Vec<Explained> {
    let ran_on: Vec<bool> = failures
        .iter()
        .map(|f| jobs::survived(f, &failures))
        .collect();
    failures
        .into_iter()
        .zip(ran_on)
        .filter(|(f, _)| f.dist.is_none())
        .map(|(f, ran_on)| {
            let ctx = Context::default();
            let (class, confidence, evidence, remedy, xid) = match f.fault {
                Some(kind) => {
                    let xid = kernel::joined(kind, xids).cloned();
                    let (class, evidence, remedy) = kernel::verdict(kind, xid.as_ref());
                    let sure = if xid.is_some() {
                        Confidence::Certain
                    } else {
                        Confidence::Likely
                    };
                    (class, sure, evidence, remedy, xid)
                }
                None => {
                    let mut v = classify(&f, &ctx);
                    let remedy = remedy(&f, &v, &ctx);
                    line_alone(&mut v.class, &mut v.confidence, &mut v.evidence, ran_on);
                    (
                        v.class.as_str().to_string(),
                        v.confidence,
                        v.evidence,
                        remedy,
                        None,
                    )
                }
            };
            Explained {
                remedy,
                rank: f.rank,
                local_rank: f.local_rank,
                log: f.log,
                line: f.line,
                source: f.source,
                allocator: f.allocator,
                class,
                confidence,
                numbers: f.numbers,
                evidence,
                message: f.message,
                xid,
            }
        })
        .collect()
}
