//! The alerts of the stories that are not a cascade or a run of ranks with no root: a common
//! cause (the first rank's own failure classified, every rank named, one remedy), and a stuck
//! rank, a stop from outside, a failure survived in `tell`'s sentences.

use super::{at, consequences, gpu_of, pid_of};
use crate::analysis::job_failure::judge::{Story, Verdict, Who};
use crate::analysis::job_failure::tell::{self, Say};
use crate::analysis::job_failure::words;
use crate::analysis::{alert_for_failure, fault};
use crate::model::{Alert, JobFailure, Level, Machine};

/// A stuck rank, a stop from outside, a failure survived: the alert of `tell`'s sentences.
pub(super) fn from_told(
    machine: &Machine,
    rec: &JobFailure,
    v: &Verdict,
    who: &[Who],
    t: tell::Told,
) -> Alert {
    let (lead, told): (usize, Vec<usize>) = match &v.story {
        Story::Stuck { behind, .. } => (behind[0], behind.clone()),
        Story::Outside { stop } => (*stop, vec![*stop]),
        Story::Survived { own } => (own[0], own.clone()),
        _ => (0, Vec::new()),
    };
    let e = &rec.events[lead];
    let pid = e.pid.or_else(|| pid_of(machine, rec, who[lead]));
    // One line a rank: a failure survived again and again is said with how often.
    let mut evidence: Vec<String> = Vec::new();
    for (k, i) in told.iter().enumerate() {
        if told[..k]
            .iter()
            .any(|j| who[*j] == who[*i] && who[*i] != Who::Unknown)
        {
            continue;
        }
        let same: Vec<usize> = told[k..]
            .iter()
            .copied()
            .filter(|j| who[*j] == who[*i] && who[*i] != Who::Unknown)
            .collect();
        let said = words::words(&rec.events[*i], who[*i], &at(&rec.events[*i]), None);
        evidence.push(match same.last() {
            Some(l) if same.len() > 1 => format!(
                "{said}, {} times in all to {}",
                same.len(),
                crate::model::units::clock(rec.events[*l].at_ms)
            ),
            _ => said,
        });
    }
    let of = match &v.story {
        Story::Stuck { .. } => Some(format!(
            "{} never reaching the collective",
            who[lead].label()
        )),
        Story::Outside { .. } => Some("the stop from outside".to_string()),
        _ => None,
    };
    evidence.extend(consequences(rec, v, who, of));
    let level = match &v.story {
        Story::Stuck { .. } => Level::Failure,
        Story::Outside { .. } => Level::Info,
        _ => Level::Suspected,
    };
    Alert {
        at_ms: e.at_ms,
        gpu_uuid: pid.and_then(|p| gpu_of(machine, p)),
        pid: if matches!(v.story, Story::Outside { .. }) {
            None
        } else {
            pid
        },
        level,
        class: t.finding.into(),
        confidence: Some(t.confidence.into()),
        title: t.title,
        evidence,
        remedy: Some(t.remedy),
        job: None,
    }
}

/// A common cause: the first rank's own failure classified, every rank named, one remedy.
pub(super) fn common(
    machine: &Machine,
    rec: &JobFailure,
    v: &Verdict,
    say: &Say,
    own: &[usize],
) -> Alert {
    let who = say.who;
    let (head, tail) = tell::common_head(say, own);
    let first = own
        .iter()
        .find(|i| {
            rec.events[**i]
                .failure
                .as_ref()
                .is_some_and(|f| f.dist.is_none())
        })
        .copied();
    let mut evidence: Vec<String> = own
        .iter()
        .map(|i| words::words(&rec.events[*i], who[*i], &at(&rec.events[*i]), None))
        .collect();
    let of = Some("the common cause".to_string());
    let mut base = match first.and_then(|i| rec.events[i].failure.as_ref()) {
        Some(f) => {
            let mut base = match f.fault {
                Some(kind) => fault::alert(f, kind, machine),
                None => alert_for_failure(f, machine),
            };
            base.title = format!("{head}; {}", base.title);
            evidence.append(&mut base.evidence);
            base.remedy = base.remedy.map(|r| format!("{r}{tail}"));
            base
        }
        None => {
            let e = &rec.events[own[0]];
            let pid = e.pid.or_else(|| pid_of(machine, rec, who[own[0]]));
            Alert {
                at_ms: e.at_ms,
                gpu_uuid: pid.and_then(|p| gpu_of(machine, p)),
                pid,
                level: Level::Failure,
                class: "common-cause".into(),
                confidence: Some("likely".into()),
                title: head,
                evidence: Vec::new(),
                remedy: Some(format!(
                    "Read one rank's traceback: the same error ended every one.{tail}"
                )),
                job: None,
            }
        }
    };
    evidence.extend(consequences(rec, v, who, of));
    base.evidence = evidence;
    base
}

/// A collective that timed out in a job whose rank was seen stalled before it (`rank-stalled`:
/// its GPU idle while the others spun, its main thread still or NCCL's RAS counting it behind):
/// that rank never reached the collective, likely; the aborts are its consequences.
pub(super) fn stalled_before(
    machine: &Machine,
    rec: &JobFailure,
    v: &Verdict,
    who: &[Who],
    timeout: usize,
) -> Option<Alert> {
    let crate::model::Group::Job(id) = &rec.group else {
        return None;
    };
    let seen = machine.alerts.iter().find(|a| {
        a.class == crate::analysis::ranks::stalled::STALLED
            && a.job.as_deref() == Some(id.as_str())
            && a.at_ms <= rec.events[timeout].at_ms
    })?;
    let pid = seen.pid?;
    let stalled = machine
        .job_of(pid)
        .and_then(|(_, r)| r.rank)
        .map_or_else(|| format!("pid {pid}"), |r| format!("rank {r}"));
    let (op, seq) = match rec.events[timeout]
        .failure
        .as_ref()
        .and_then(|f| f.dist.as_ref())
    {
        Some(crate::oom::dist::Dist::WatchdogTimeout { op, seq, .. }) => (op.clone(), *seq),
        _ => (String::from("a collective"), 0),
    };
    let waited = v
        .followed
        .iter()
        .filter(|i| who[**i] != Who::Unknown)
        .count();
    let mut evidence = vec![format!(
        "{stalled} seen stalled at {}: {}",
        crate::model::units::clock(seen.at_ms),
        seen.title
    )];
    evidence.extend(seen.evidence.iter().cloned());
    evidence.extend(consequences(
        rec,
        v,
        who,
        Some(format!("{stalled} never reaching the collective")),
    ));
    Some(Alert {
        at_ms: rec.events[timeout].at_ms,
        gpu_uuid: seen.gpu_uuid.clone(),
        pid: Some(pid),
        level: Level::Failure,
        class: "rank-stuck".into(),
        confidence: Some("likely".into()),
        title: format!(
            "{stalled} never reached {op} #{seq}, as it was seen stalled before: {} waited for it until NCCL's watchdog aborted them",
            tell::ranks_count(waited.max(1))
        ),
        evidence,
        remedy: seen.remedy.clone(),
        job: None,
    })
}
