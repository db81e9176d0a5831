//! The failures a probe saw without a log: an OOM its framework counted, a process that ended
//! with its pool at its limit or fragmented; each judged from the pool's last figures (a leak
//! first where allocated's floor climbed into it).

use super::{AT_LIMIT_PERMILLE, SAME_FAILURE_MS, at_limit, fragmented, short, unusable};
use crate::analysis::remedy::{defragment, dialect_of, expandable, raise_limit};
use crate::analysis::risk::{Risk, context, figures};
use crate::model::{GpuTrack, Level, ProcessTrack};
use crate::oom::sizes::human;
use crate::sample::{Pool, ProcessEnd};

/// What a pool's last figures say about why it failed.
fn verdict(pool: &Pool, g: Option<&GpuTrack>, expandable: bool) -> (&'static str, String) {
    // At a failure the pool could not grow: its room was nil.
    if let Some(why) = fragmented(pool, unusable(pool, expandable), Some(0), 0) {
        ("fragmentation", why)
    } else if let Some((used, limit)) = at_limit(pool, AT_LIMIT_PERMILLE) {
        (
            "pool-limit",
            format!("{} of its {} limit in use", human(used), human(limit)),
        )
    } else if let Some(free) = g.and_then(short) {
        ("device-full", format!("the GPU had {} free", human(free)))
    } else {
        ("unknown", "the pool's figures do not show why".into())
    }
}

fn failure_risk(
    t: &ProcessTrack,
    pool: &Pool,
    g: Option<&GpuTrack>,
    what: &str,
    at_ms: u64,
) -> Risk {
    let ctx = context(t);
    let expandable = expandable(&ctx);
    let (mut class, mut why) = verdict(pool, g, expandable);
    let pid = t.sample.pid;
    let dialect = dialect_of(pool.framework);
    let mut remedy = match class {
        "fragmentation" => defragment(dialect, &ctx),
        "pool-limit" => raise_limit(None, dialect, &ctx),
        _ => "Lower the peak (smaller batch) or free the GPU of other work; keep the job's output in a log gpumon can follow (`gpumon run`) for the exact request.".into(),
    };
    let mut evidence = figures(pool);
    // A leak first: allocated's floor climbed into the failure by more than what is stranded.
    let free = unusable(pool, expandable).unwrap_or(0);
    if class == "fragmentation"
        && let Some(l) = crate::analysis::causes::leak_first(t, at_ms, free)
    {
        class = "leak";
        let second = crate::analysis::growth::second::words(free, expandable, l.climb.rate);
        why = format!(
            "{} kept from step to step, then fragmentation: {why}",
            l.rate_words()
        );
        remedy = l.remedy(pid, None, Some(pool.framework));
        if let Some(s) = second {
            evidence.insert(0, s.evidence);
            remedy = format!("{remedy} {}", s.remedy);
        }
        evidence.insert(0, l.evidence());
    }
    evidence.insert(0, why.clone());
    Risk {
        class,
        pid: Some(pid),
        gpu: t.sample.gpu_uuid.clone(),
        level: Level::Failure,
        confidence: Some("likely"),
        title: format!(
            "pid {pid} {} OOM {what}: {class} (likely), {why}",
            pool.framework.label()
        ),
        evidence,
        remedy,
    }
}

/// PyTorch counts its OOMs: a count that rose is a failure, even when no log said so. It is
/// judged in the sample in which it became ready (at once, or once the map of the failure came
/// while the job records allocation history: `model::ProbeOom`), unless a log reported the failure
/// since just before the count rose: one OOM, one alert.
pub(super) fn probe_oom(
    t: &ProcessTrack,
    pool: &Pool,
    g: &GpuTrack,
    at_ms: u64,
    failed: &dyn Fn(u32, u64) -> bool,
) -> Option<Risk> {
    let oom = t.probe_oom.filter(|o| o.ready_ms == Some(at_ms))?;
    if failed(t.sample.pid, oom.rose_ms.saturating_sub(SAME_FAILURE_MS)) {
        return None;
    }
    Some(failure_risk(
        t,
        pool,
        Some(g),
        "seen by its probe (no log)",
        at_ms,
    ))
}

/// A probed process that ended, no log seen. Its probe's end record says how: an exit through
/// the interpreter is no failure, whatever its pool held; an uncaught OOM is a failure, judged
/// from the pool's last figures; another exception is not a memory failure. With no record
/// (a signal, `os._exit`, a crash) and its pool at its limit or fragmented, whether it died of an
/// OOM is not known: suspected, with what the last figures would explain.
pub(super) fn died_at_limit(t: &ProcessTrack, pool: &Pool) -> Option<Risk> {
    match &t.end {
        Some(end) if end.raised_oom() => return Some(raised_oom(t, pool, end)),
        Some(_) => return None,
        None => {}
    }
    let (class, why) = verdict(pool, None, expandable(&context(t)));
    if !matches!(class, "fragmentation" | "pool-limit") {
        return None;
    }
    let pid = t.sample.pid;
    let mut risk = failure_risk(t, pool, None, "", t.last_seen_ms);
    // A leak first where its floor climbed to the end (failure_risk said so).
    let named = if risk.class == "leak" { "leak" } else { class };
    risk.level = Level::Suspected;
    risk.class = "exit-at-limit";
    risk.title = format!(
        "pid {pid} exited with its {} pool {}: if it died of an OOM, {named} (likely; no log seen)",
        pool.framework.label(),
        if class == "pool-limit" {
            "at its limit"
        } else {
            "fragmented"
        },
    );
    if named == class
        && let Some(first) = risk.evidence.first_mut()
    {
        *first = format!("its last probe figures: {why}");
    }
    Some(risk)
}

/// A process whose probe recorded an uncaught OOM as its end, no log seen: a failure, its class
/// from the pool's last figures.
fn raised_oom(t: &ProcessTrack, pool: &Pool, end: &ProcessEnd) -> Risk {
    let mut risk = failure_risk(t, pool, None, "", t.last_seen_ms);
    let pid = t.sample.pid;
    let kind = end
        .exception
        .as_ref()
        .map_or("an exception", |x| x.kind.as_str());
    risk.title = format!(
        "pid {pid} raised {kind} (its probe's end record; no log seen): {} (likely)",
        risk.class
    );
    risk.evidence
        .insert(0, format!("its probe recorded that it {}", end.words()));
    risk
}
