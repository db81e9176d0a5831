//! `gpumon explain FILE…`: each file opened once through `given` (a pipe, `-`, gzip or zstd) and
//! read as what its first bytes say: a log goes to `analysis::explain`; a gpumon recording is
//! replayed through the pipeline (as `snapshot --replay` does, without sleeping) and the failures
//! and risks it raised are reported after the logs' failures. A file that cannot be read (or
//! is neither) is named on stderr, the others are reported, and the status is 1.
//!
//! A recording's alerts include the failures of the logs it followed while recording: a log
//! given on the same command line is reported again, under its own name (each input on its own).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Serialize;

use super::given::{self, Wants};
use super::{Fail, print_out};
use crate::analysis::explain::{Extra, LogFile, Logs, Unreadable, read_log, render, wrap};
use crate::cli::Format;
use crate::infile::{Input, Kind};
use crate::model::{Alert, Group, Level, Machine, Point, ProcKey, ProcessTrack, Ring};
use crate::snapshot;
use crate::snapshot::timeline::Moment;
use crate::source::replay::ReplaySource;

/// One alert raised while a recording was replayed (the JSON shape).
#[derive(Debug, Serialize)]
struct Raised {
    at_ms: u64,
    /// RFC 3339 UTC.
    time: String,
    pid: Option<u32>,
    command: Option<String>,
    gpu: Option<u32>,
    gpu_uuid: Option<String>,
    level: Level,
    class: String,
    confidence: Option<String>,
    title: String,
    evidence: Vec<String>,
    remedy: Option<String>,
    /// The distributed job it is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    job: Option<String>,
    /// For a risk: whether an OOM of that process (or GPU) followed in the recording, and if
    /// not, why the risk was raised all the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    outcome: Option<String>,
}

#[derive(Debug, Serialize)]
struct Replayed {
    file: String,
    samples: u64,
    /// Replayed to its end (not cut off).
    whole: bool,
    /// The line the recording was cut off in: replayed up to the last whole line before it.
    #[serde(skip_serializing_if = "Option::is_none")]
    cut_at_line: Option<usize>,
    alerts: Vec<Raised>,
    /// Text timelines of the processes the alerts name, in the order first named.
    #[serde(skip)]
    timelines: Vec<String>,
}

pub(super) fn explain(paths: &[PathBuf], format: Format) -> Result<ExitCode, Fail> {
    let (mut logs, mut replayed, mut unreadable) = (Vec::new(), Vec::new(), Vec::new());
    for path in paths {
        match read(path) {
            Ok(Given::Log(log)) => logs.push(log),
            Ok(Given::Recording(r)) => replayed.push(r),
            Err(error) => {
                crate::say!("gpumon: {error}");
                unreadable.push(Unreadable {
                    file: path.display().to_string(),
                    error,
                });
            }
        }
    }
    // Nothing read, nothing reported: a report would read as an all-clear.
    if logs.is_empty() && replayed.is_empty() {
        return Ok(ExitCode::from(1));
    }
    let status = if unreadable.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    let logs = Logs::new(logs, unreadable);
    let extra = if replayed.is_empty() {
        None
    } else {
        Some(Extra {
            json: serde_json::to_value(&replayed).map_err(Fail::runtime)?,
            text: text(&replayed),
        })
    };
    print_out(&render(&logs, format, extra), format)?;
    Ok(status)
}

/// One file given, read: a log's failures, or a recording's replay.
enum Given {
    Log(LogFile),
    Recording(Replayed),
}

/// Reads the file at `path` as what its first bytes say it is; the error names it.
fn read(path: &Path) -> Result<Given, String> {
    let input = given::open(path)?;
    given::check(&input, Wants::LogOrRecording)?;
    if input.kind == Kind::Recording {
        return replay(input).map(Given::Recording);
    }
    let name = input.name.clone();
    let log = read_log(&name, input.reader()).map_err(|e| format!("cannot read {name}: {e}"))?;
    if let Some(line) = log.read.cut_at_line {
        crate::say!(
            "gpumon: {name} is cut off at line {line} (its compressed stream ends mid-frame): \
             read up to there"
        );
    }
    Ok(Given::Log(log))
}

/// Replays the recording `input` through the pipeline and keeps every failure and risk alert
/// raised on the way, oldest first, with the process's command and the GPU's index as then.
fn replay(input: Input) -> Result<Replayed, String> {
    let name = input.name.clone();
    let mut source = ReplaySource::read(&name, input.reader()).map_err(|e| e.to_string())?;
    let (mut samples, mut seen) = (0, 0);
    let mut alerts = Vec::new();
    // The tracks of the processes the alerts name, kept as they exit (before the machine drops
    // them); `None` while one still runs.
    let mut tracks: Vec<(ProcKey, Option<ProcessTrack>)> = Vec::new();
    // Each job failure's alert, by where it stands in `alerts`: amended as the ranks' later
    // failures come, it is reported as it ended.
    let mut jobs: Vec<((Group, u64), usize)> = Vec::new();
    let end = super::files::replay_recording(&mut source, |machine, sample| {
        samples += u64::from(sample);
        let total = added(machine);
        let new = usize::try_from(total - seen).unwrap_or(usize::MAX);
        seen = total;
        let new = &machine.alerts[..new.min(machine.alerts.len())];
        for r in &machine.job_failures {
            let key = (r.group.clone(), r.opened_ms);
            if let Some((_, i)) = jobs.iter().find(|(k, _)| *k == key) {
                alerts[*i] = raised(&r.alert, machine);
            } else if new.contains(&r.alert) {
                jobs.push((
                    key,
                    alerts.len()
                        + new
                            .iter()
                            .rev()
                            .take_while(|a| **a != r.alert)
                            .filter(|a| a.level != Level::Notice)
                            .count(),
                ));
            }
        }
        // A warning taken over in place (a rank's `leak` by its job's `rank-grows-alone`,
        // `pipeline::add`: same time, process and GPU) is reported as it stands.
        for a in alerts.iter_mut().filter(|a| a.level == Level::Suspected) {
            if let Some(now) = machine.alerts.iter().find(|m| {
                m.at_ms == a.at_ms
                    && m.pid == a.pid
                    && m.gpu_uuid == a.gpu_uuid
                    && m.level == a.level
                    && m.class != a.class
            }) {
                *a = raised(now, machine);
            }
        }
        // Newest first in the machine: reversed, they are in the order raised.
        for a in new.iter().rev().filter(|a| a.level != Level::Notice) {
            alerts.push(raised(a, machine));
            let named = machine.processes.keys().find(|k| {
                Some(k.pid) == a.pid && a.gpu_uuid.as_ref().is_none_or(|g| *g == k.gpu_uuid)
            });
            if let Some(k) = named.filter(|k| tracks.iter().all(|(t, _)| t != *k)) {
                tracks.push((k.clone(), None));
            }
        }
        for (key, kept) in tracks.iter_mut().filter(|(_, kept)| kept.is_none()) {
            *kept = machine
                .processes
                .get(key)
                .filter(|t| t.exited_ms.is_some())
                .cloned();
        }
    })
    .map_err(|e| e.to_string())?;
    outcomes(&mut alerts);
    let timelines = tracks
        .into_iter()
        .filter_map(|(key, kept)| kept.or_else(|| end.processes.get(&key).cloned()))
        .filter_map(|t| timeline(&t, &alerts))
        .collect();
    if samples == 0 {
        return Err(format!(
            "{name}: a recording without samples, nothing to explain"
        ));
    }
    Ok(Replayed {
        whole: source.cut_off().is_none(),
        cut_at_line: source.cut_off(),
        file: name,
        samples,
        alerts,
        timelines,
    })
}

/// Each risk's outcome: the failure of the same process (or, for a GPU-wide risk or one about
/// memory a process holds for the others on its GPU, on the same GPU) that followed it, or that
/// none did, with the evidence it was raised on.
fn outcomes(alerts: &mut [Raised]) {
    let failures: Vec<(u64, Option<u32>, Option<String>, String)> = alerts
        .iter()
        .filter(|a| a.level == Level::Failure && crate::analysis::classify::is_oom(&a.class))
        .map(|a| (a.at_ms, a.pid, a.gpu_uuid.clone(), a.class.clone()))
        .collect();
    // A GPU's health is no risk of an OOM: it gets no outcome.
    let health = crate::analysis::gpu_events::HEALTH_CLASSES;
    for a in alerts
        .iter_mut()
        .filter(|a| a.level == Level::Suspected && !health.contains(&a.class.as_str()))
    {
        let for_the_gpu = a.pid.is_none()
            || matches!(a.class.as_str(), "idle-preallocation" | "releasable-cache");
        let followed = failures.iter().find(|(at, pid, gpu, _)| {
            *at >= a.at_ms
                && if for_the_gpu {
                    *gpu == a.gpu_uuid
                } else {
                    *pid == a.pid
                }
        });
        a.outcome = Some(match followed {
            Some((at, _, _, class)) => format!(
                "an OOM followed {} later ({class})",
                crate::model::units::duration_ms(at - a.at_ms)
            ),
            None => format!(
                "no OOM followed in this recording; raised because {}",
                a.evidence
                    .first()
                    .map_or("of the figures above", String::as_str)
            ),
        });
    }
}

/// The process's allocated, pool and device memory around the moments of its alerts.
fn timeline(t: &ProcessTrack, alerts: &[Raised]) -> Option<String> {
    let points = |r: &Ring| r.iter().copied().collect::<Vec<Point>>();
    let pool = t
        .pool_history
        .as_ref()
        .map(|h| (points(&h.allocated), points(&h.reserved)));
    let device = points(&t.history);
    let mut series: Vec<(&str, &[Point])> = Vec::new();
    if let Some((allocated, reserved)) = &pool {
        series.extend([("allocated", &allocated[..]), ("pool", &reserved[..])]);
    }
    series.push(("device", &device));
    let moments: Vec<Moment> = alerts
        .iter()
        .filter(|a| a.pid == Some(t.key.pid))
        .filter(|a| a.gpu_uuid.as_ref().is_none_or(|g| *g == t.key.gpu_uuid))
        .map(|a| Moment {
            at_ms: a.at_ms,
            failure: a.level == Level::Failure,
        })
        .collect();
    snapshot::timeline::render(t.key.pid, &series, &moments)
}

/// How many alerts the machine has taken in, dropped ones included.
fn added(m: &Machine) -> u64 {
    m.alerts.len() as u64 + m.alerts_dropped
}

fn raised(a: &Alert, m: &Machine) -> Raised {
    let command = a.pid.and_then(|pid| {
        m.processes
            .values()
            .filter(|p| p.key.pid == pid)
            .filter(|p| a.gpu_uuid.as_ref().is_none_or(|g| *g == p.key.gpu_uuid))
            .find_map(|p| p.sample.command.value().cloned())
    });
    Raised {
        at_ms: a.at_ms,
        time: snapshot::time_ms(a.at_ms),
        pid: a.pid,
        command,
        gpu: a
            .gpu_uuid
            .as_deref()
            .and_then(|u| m.gpu(u))
            .map(|g| g.sample.index),
        gpu_uuid: a.gpu_uuid.clone(),
        level: a.level,
        class: a.class.clone(),
        confidence: a.confidence.clone(),
        title: a.title.clone(),
        evidence: a.evidence.clone(),
        remedy: a.remedy.clone(),
        job: a.job.clone(),
        outcome: None,
    }
}

/// The recordings' alerts in `analysis::explain`'s style, within its 80 columns.
fn text(all: &[Replayed]) -> String {
    let mut out = String::new();
    for (i, r) in all.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let n = r.alerts.len();
        out.push_str(&wrap(
            &format!(
                "{}: gpumon recording, {} sample(s), {n} alert(s) raised in replay",
                r.file, r.samples
            ),
            "",
            "  ",
        ));
        if let Some(line) = r.cut_at_line {
            out.push_str(&wrap(
                &format!("cut off at line {line}: replayed up to the last whole line before it"),
                "  ",
                "  ",
            ));
        }
        for a in &r.alerts {
            out.push('\n');
            let level = match (a.level, &a.confidence) {
                (Level::Failure, Some(c)) => format!("failure, {c}"),
                (level, _) => level.word().into(),
            };
            let mut head = a.time.clone();
            if let Some(g) = a.gpu {
                head.push_str(&format!(" GPU {g}"));
            }
            if let Some(pid) = a.pid {
                head.push_str(&format!(" pid {pid}"));
            }
            out.push_str(&wrap(&format!("{head}: {} ({level})", a.class), "", "  "));
            if let Some(c) = &a.command {
                out.push_str(&wrap(c, "  command: ", "    "));
            }
            out.push_str(&wrap(&a.title, "  > ", "    "));
            for ev in &a.evidence {
                out.push_str(&wrap(ev, "  - ", "    "));
            }
            if let Some(r) = &a.remedy {
                out.push_str(&wrap(r, "  remedy: ", "    "));
            }
            if let Some(o) = &a.outcome {
                out.push_str(&wrap(o, "  outcome: ", "    "));
            }
        }
        for t in &r.timelines {
            out.push_str("\n\n");
            out.push_str(t.trim_end());
        }
    }
    let n: usize = all.iter().map(|r| r.alerts.len()).sum();
    out.push_str(&format!("\n{n} alert(s) in {} recording(s)\n", all.len()));
    out
}
