//! Risks read from the memory history, each raised once per (class, pid or GPU): preallocation
//! (information, unless it crowds another process), a growth step larger than what is free, a slow
//! leak (`growth/slow.rs`: a floor that climbs window after window, probed or not), a GPU
//! filling up with memory that cannot be released (a probed process's cache never counts), and a
//! process that exited mid-growth on a full GPU; a distributed job's rank that grows alone or sits
//! on another rank's GPU (`ranks.rs`). VMS above device memory is normal: never flagged.

use std::cell::OnceCell;

use crate::analysis::filling::time_to_full;
use crate::analysis::risk::{Finding, IsNew};
use crate::analysis::{growth, idle, maps, pool, ranks};
use crate::model::units::duration_ms;
use crate::model::{Alert, Group, Level};
use crate::model::{GpuTrack, Machine, ProcessTrack, processes_on};
use crate::oom::sizes::human;
use crate::sample::{Framework, Pool};

/// A process that takes this share of a GPU (per mille) at start has preallocated.
const PREALLOC_PERMILLE: u64 = 700;
/// "At start": within this long of its first sample.
const PREALLOC_WITHIN_MS: u64 = 10_000;
/// Steps smaller than this are allocator noise.
const MIN_STEP: u64 = 64 << 20;
/// A GPU with less free than this (or 2 % of its memory) is short.
const SHORT_FREE: u64 = 1 << 30;
/// A growth step this close before an exit counts as "mid-growth".
const EXIT_AFTER_STEP_MS: u64 = 60_000;
/// A growth step older than this means the process has stopped growing.
const GROWING_WITHIN_MS: u64 = 60_000;

/// The risks to raise at `at_ms`; `fresh` are the alerts already found in this sample (failures),
/// which count as raised.
pub fn scan(machine: &Machine, fresh: &[Alert], at_ms: u64) -> Vec<Alert> {
    let mut out: Vec<Alert> = Vec::new();
    // The alerts by pid, indexed the first time a check asks (a check asks only when it would
    // fire): a process's earlier alerts are found without a walk through all of them.
    let index: OnceCell<Vec<(Option<u32>, &Alert)>> = OnceCell::new();
    let alerts_of = |pid: Option<u32>| {
        let index = index.get_or_init(|| {
            let mut v: Vec<(Option<u32>, &Alert)> = machine
                .alerts
                .iter()
                .chain(fresh)
                .map(|a| (a.pid, a))
                .collect();
            v.sort_by_key(|(p, _)| *p);
            v
        });
        let from = index.partition_point(|(p, _)| *p < pid);
        let to = index.partition_point(|(p, _)| *p <= pid);
        index[from..to].iter().map(|(_, a)| *a)
    };
    // A rank's `rank-grows-alone` stands for its own growth alerts (`ranks::stands_for`).
    let same = |a: &Alert, class: &str, pid: Option<u32>, gpu: &str| {
        a.pid == pid
            && (a.class == class || ranks::stands_for(&a.class, class))
            && a.gpu_uuid.as_deref() == Some(gpu)
    };
    // A job's ranks growing alike stand for each rank's own growth alerts.
    let raised = |out: &[Alert], class: &str, pid: Option<u32>, gpu: &str| {
        alerts_of(pid).any(|a| same(a, class, pid, gpu))
            || out.iter().any(|a| same(a, class, pid, gpu))
            || pid.is_some_and(|p| ranks::alike_stands_for(machine, out, p, class))
    };
    // A rank of a job whose failure was read has its end told there (a consequence, or the
    // root cause whose line was not joined to it).
    let job_failed = |pid: u32, since: u64| {
        machine.job_of(pid).is_some_and(|(j, row)| {
            machine.job_failures.iter().any(|r| {
                r.group == Group::Job(j.id.clone())
                    && r.events.iter().any(|e| {
                        e.at_ms >= since
                            && (e.pid == Some(pid)
                                || (e.pid.is_none() && e.rank.is_some() && e.rank == row.rank))
                    })
            })
        })
    };
    let logged =
        |pid: u32| alerts_of(Some(pid)).any(|a| a.level == Level::Failure) || job_failed(pid, 0);
    // The jobs first: a rank growing alone is raised before its own leak rules see the climb, and
    // stands for them; a leak raised before it stays the one alert.
    // A leak the rank's own rule raised before (in an earlier sample: the job's comparison needs
    // a few more readings) is taken over by the job's alert (`pipeline`); one raised in this
    // sample stays the one alert.
    let job_new = |class: &str, pid: u32, gpu: &str| {
        !raised(&out, class, Some(pid), gpu)
            && (class != ranks::GROWS_ALONE
                || !out.iter().any(|a| {
                    a.class == "leak" && a.pid == Some(pid) && a.gpu_uuid.as_deref() == Some(gpu)
                }))
    };
    let jobs = ranks::alerts(machine, at_ms, &job_new);
    out.extend(jobs);
    // Each check decides on numbers first and asks whether the alert is new only when it would
    // fire, then writes its text only for a new alert.
    // GPUs and processes are both ordered by UUID first: going GPU by GPU through each one's
    // processes visits them in the map's order, skipping processes of GPUs never sampled.
    let on_gpus = machine
        .gpus
        .values()
        .flat_map(|g| processes_on(&machine.processes, &g.sample.uuid).map(move |t| (t, g)));
    for (t, g) in on_gpus {
        let pid = Some(t.sample.pid);
        let gpu = g.sample.uuid.as_str();
        let found = preallocation(t, g, &|| !raised(&out, "preallocation", pid, gpu));
        if let Some((title, evidence, remedy)) = found {
            let mut a = alert(at_ms, "preallocation", pid, gpu, title, evidence, remedy);
            if !crowds(machine, t, g) {
                a.level = Level::Info;
            }
            out.push(a);
        }
        let found = growth_step(t, g, &|| !raised(&out, "growth-step", pid, gpu));
        if let Some((title, evidence, remedy)) = found {
            out.push(alert(
                at_ms,
                "growth-step",
                pid,
                gpu,
                title,
                evidence,
                remedy,
            ));
        }
        // A slow leak: warned whatever the distance to the limit (the fast rule, in
        // `pool::risks`, warns a climb near its limit; the first to see it raises `leak`).
        let slow = match t.sample.pool.value() {
            _ if t.exited_ms.is_some() => None,
            Some(pool) => growth::slow::probed(t, pool, g),
            None => growth::slow::unprobed(t, g),
        };
        if let Some(risk) = slow.filter(|r| !raised(&out, r.class, r.pid, &r.gpu)) {
            out.push(risk.into_alert(at_ms));
        }
        let found = exit_no_log(t, g, &logged, &|| !raised(&out, "exit-no-log", pid, gpu));
        if let Some((title, evidence, remedy)) = found {
            out.push(alert(
                at_ms,
                "exit-no-log",
                pid,
                gpu,
                title,
                evidence,
                remedy,
            ));
        }
    }
    let failed_since = |pid: u32, since: u64| {
        alerts_of(Some(pid)).any(|a| a.level == Level::Failure && a.at_ms >= since)
            || job_failed(pid, since)
    };
    let risks = pool::risks(machine, at_ms, &failed_since);
    for mut risk in risks.into_iter().chain(idle::risks(machine, at_ms)) {
        if !raised(&out, risk.class, risk.pid, &risk.gpu) {
            if let Some(pid) = risk.pid {
                let failure = risk.level == Level::Failure || risk.class == "exit-at-limit";
                let more = maps::evidence(machine, risk.class, pid, &risk.gpu, failure);
                risk.evidence.splice(0..0, more);
                if risk.class == "leak" {
                    risk.remedy = maps::with_site(machine, pid, &risk.gpu, &risk.remedy);
                }
            }
            out.push(risk.into_alert(at_ms));
        }
    }
    for risk in maps::site_risks(machine) {
        if !raised(&out, risk.class, risk.pid, &risk.gpu) {
            out.push(risk.into_alert(at_ms));
        }
    }
    for g in machine.gpus.values() {
        let gpu = g.sample.uuid.as_str();
        // Asked only once the GPU would warn: a process's own growth alert already names this
        // GPU's limit and who fills it, and so does a rank's that grows alone there.
        let explained = |out: &[Alert]| {
            processes_on(&machine.processes, gpu)
                .filter(|t| t.exited_ms.is_none())
                .any(|t| {
                    let pid = Some(t.sample.pid);
                    let grows = |a: &Alert| {
                        a.class == ranks::GROWS_ALONE
                            && a.pid == pid
                            && a.gpu_uuid.as_deref() == Some(gpu)
                    };
                    t.sample
                        .pool
                        .value()
                        .is_some_and(|pool| growth::fills_gpu(t, pool, g, at_ms))
                        || alerts_of(pid).any(grows)
                        || out.iter().any(grows)
                })
        };
        if let Some((title, evidence, remedy)) = time_to_full(machine, g, &|| {
            !raised(&out, "time-to-full", None, gpu) && !explained(&out)
        }) {
            out.push(alert(
                at_ms,
                "time-to-full",
                None,
                gpu,
                title,
                evidence,
                remedy,
            ));
        }
    }
    // A rank's risks name its job.
    for a in out.iter_mut().filter(|a| a.job.is_none()) {
        a.job = a
            .pid
            .and_then(|p| machine.job_of(p))
            .map(|(j, _)| j.id.clone());
    }
    out
}

fn alert(
    at_ms: u64,
    class: &str,
    pid: Option<u32>,
    gpu: &str,
    title: String,
    evidence: Vec<String>,
    remedy: Option<String>,
) -> Alert {
    Alert {
        at_ms,
        gpu_uuid: Some(gpu.to_string()),
        pid,
        level: Level::Suspected,
        class: class.into(),
        confidence: None,
        title,
        evidence,
        remedy,
        job: None,
    }
}

/// Whether a preallocating process crowds others out: another live process on its GPU, and the
/// GPU short of free memory.
fn crowds(machine: &Machine, t: &ProcessTrack, g: &GpuTrack) -> bool {
    let others = processes_on(&machine.processes, &g.sample.uuid)
        .any(|o| o.exited_ms.is_none() && o.sample.pid != t.sample.pid);
    let short = g
        .sample
        .memory
        .value()
        .is_some_and(|m| m.free < SHORT_FREE.max(m.total / 50));
    others && short
}

fn total(g: &GpuTrack) -> Option<u64> {
    g.sample.memory.value().map(|m| m.total).filter(|t| *t > 0)
}

fn preallocation(t: &ProcessTrack, g: &GpuTrack, is_new: IsNew) -> Option<Finding> {
    if t.exited_ms.is_some() {
        return None;
    }
    let fw = t.sample.framework.get()?;
    let (vars, default, remedy): (&[&str], &str, &str) = match fw {
        Framework::Jax => (
            &[
                "XLA_PYTHON_CLIENT_PREALLOCATE",
                "XLA_CLIENT_MEM_FRACTION",
                "XLA_PYTHON_CLIENT_MEM_FRACTION",
            ],
            "JAX preallocates 75% of the GPU by default",
            "Set XLA_PYTHON_CLIENT_PREALLOCATE=false to allocate on demand, or XLA_CLIENT_MEM_FRACTION to size the pool.",
        ),
        Framework::Tensorflow => (
            &["TF_FORCE_GPU_ALLOW_GROWTH"],
            "TensorFlow maps nearly all GPU memory by default",
            "Set TF_FORCE_GPU_ALLOW_GROWTH=true to let the pool grow on demand instead.",
        ),
        _ => return None,
    };
    let total = total(g)?;
    let threshold = total / 1000 * PREALLOC_PERMILLE;
    // In time order, a reading past the first seconds ends the search: any later one is too late.
    let until = t.first_seen_ms.saturating_add(PREALLOC_WITHIN_MS);
    let ordered = t.history.in_time_order();
    let p = t
        .history
        .iter()
        .take_while(|p| !ordered || p.at_ms <= until)
        .find(|p| p.value.is_some_and(|v| v >= threshold))?;
    let took = p.value?;
    let after = p.at_ms.saturating_sub(t.first_seen_ms);
    if after > PREALLOC_WITHIN_MS || !is_new() {
        return None;
    }
    let share = took.saturating_mul(100) / total;
    let mut evidence = vec![
        format!(
            "took {} of {} ({share}%) within {} of its first sample",
            human(took),
            human(total),
            duration_ms(after)
        ),
        format!("{default} ({})", vars.join(", ")),
    ];
    evidence.push(match t.sample.settings.value() {
        Some(s) => {
            let set: Vec<String> = vars
                .iter()
                .filter_map(|k| s.get(*k).map(|v| format!("{k}={v}")))
                .collect();
            if set.is_empty() {
                "none of them is set in its initial environment".into()
            } else {
                format!("set in its initial environment: {}", set.join(", "))
            }
        }
        None => format!(
            "its settings are unknown: {}",
            t.sample.settings.reason().unwrap_or("not read")
        ),
    });
    Some((
        format!(
            "pid {} {} preallocated {share}% of GPU{}",
            t.sample.pid,
            fw.label(),
            g.sample.index
        ),
        evidence,
        Some(remedy.into()),
    ))
}

/// The allocator's current growth step: the newest increase, if it came after the start-up burst
/// (the first allocations, e.g. a preallocated pool, have their own warning) and within the last
/// minute (a process that stopped growing will not take another step).
fn growth_step(t: &ProcessTrack, g: &GpuTrack, is_new: IsNew) -> Option<Finding> {
    if t.exited_ms.is_some() {
        return None;
    }
    // A probed process takes its next step from the cache it can release before the GPU's free.
    let cache = t.sample.pool.value().and_then(Pool::reusable).unwrap_or(0);
    let free = g.sample.memory.value()?.free;
    let now = t.history.last()?.at_ms;
    let (at, step) = t.history.latest_step()?;
    let after_start = at >= t.first_seen_ms.saturating_add(PREALLOC_WITHIN_MS);
    let recent = now.saturating_sub(at) <= GROWING_WITHIN_MS;
    if !after_start || !recent || step < MIN_STEP || step <= free.saturating_add(cache) || !is_new()
    {
        return None;
    }
    Some((
        format!(
            "pid {} grows in steps of {}, more than GPU{}'s {} free",
            t.sample.pid,
            human(step),
            g.sample.index,
            human(free)
        ),
        vec![
            format!("its latest growth step: {}", human(step)),
            format!("GPU{} free now: {}", g.sample.index, human(free)),
            "its next step of that size will fail unless memory is freed".into(),
        ],
        Some("Free memory on this GPU, or cap the process's pool so its next growth step is not attempted.".into()),
    ))
}

/// `logged`: whether a failure was read from a log for this pid.
fn exit_no_log(
    t: &ProcessTrack,
    g: &GpuTrack,
    logged: &dyn Fn(u32) -> bool,
    is_new: IsNew,
) -> Option<Finding> {
    let exited = t.exited_ms?;
    let (step_at, step) = t.history.latest_step()?;
    if step < MIN_STEP || t.last_seen_ms.saturating_sub(step_at) > EXIT_AFTER_STEP_MS {
        return None;
    }
    let m = g.sample.memory.value()?;
    let used = g.used.last_at_or_before(t.last_seen_ms)?.value?;
    let free = m
        .total
        .saturating_sub(used)
        .saturating_sub(m.reserved.get().unwrap_or(0));
    if free >= step {
        return None;
    }
    if logged(t.sample.pid) || !is_new() {
        return None;
    }
    Some((
        format!(
            "pid {} exited while growing on a full GPU{}: possible allocation failure, no log seen",
            t.sample.pid, g.sample.index
        ),
        vec![
            format!(
                "last growth step {} at {} before it exited",
                human(step),
                duration_ms(exited.saturating_sub(step_at))
            ),
            format!(
                "GPU{} had {} free when last seen",
                g.sample.index,
                human(free)
            ),
        ],
        Some(
            "Follow its output with --log FILE (or redirect it to a file) to see the failure."
                .into(),
        ),
    ))
}
