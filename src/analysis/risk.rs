//! A risk before it becomes an alert, and the parts every probe-based risk shares: the
//! process's settings as a context for remedies, and the pool's figures as evidence lines.

use crate::analysis::context::Context;
use crate::model::{Alert, Level, ProcessTrack};
use crate::oom::sizes::human;
use crate::sample::Pool;

/// A finding of the history rules: title, evidence, remedy.
pub type Finding = (String, Vec<String>, Option<String>);

/// Whether the finding is new (not raised before): asked only once the numbers say it fires.
pub type IsNew<'a> = &'a dyn Fn() -> bool;

/// One finding before it becomes an alert: class, pid, GPU, level, title, evidence, remedy.
pub struct Risk {
    pub class: &'static str,
    pub pid: Option<u32>,
    pub gpu: String,
    pub level: Level,
    pub confidence: Option<&'static str>,
    pub title: String,
    pub evidence: Vec<String>,
    pub remedy: String,
}

impl Risk {
    pub fn into_alert(self, at_ms: u64) -> Alert {
        Alert {
            at_ms,
            gpu_uuid: Some(self.gpu),
            pid: self.pid,
            level: self.level,
            class: self.class.into(),
            confidence: self.confidence.map(str::to_string),
            title: self.title,
            evidence: self.evidence,
            remedy: Some(self.remedy),
            job: None,
        }
    }
}

pub fn context(t: &ProcessTrack) -> Context {
    Context {
        settings: t.sample.settings.value().cloned(),
        framework: t.sample.framework.get(),
        ..Context::default()
    }
}

/// The pool's figures as evidence lines, each only where the framework reports it.
pub fn figures(pool: &Pool) -> Vec<String> {
    let rows: [(&str, Option<u64>); 6] = [
        ("allocated", pool.allocated),
        ("held by the pool", pool.reserved),
        ("cached, free", pool.cached_free),
        ("stranded in split blocks", pool.stranded),
        ("largest free block", pool.largest_free_block),
        ("limit", pool.limit),
    ];
    let mut out: Vec<String> = rows
        .iter()
        .filter_map(|(name, v)| v.map(|b| format!("{name}: {}", human(b))))
        .collect();
    if let Some(r) = pool.alloc_retries.filter(|r| *r > 0) {
        out.push(format!("allocation retries (cache flushes): {r}"));
    }
    out.push("figures from the allocator probe inside the process".into());
    out
}
