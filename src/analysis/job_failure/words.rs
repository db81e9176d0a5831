//! A rank's event in words ("rank 1 aborted by NCCL's watchdog at 06:06:43 waiting on ALLREDUCE
//! #3067 (timeout 40s)"), and the root cause short ("rank 0's OOM"): the live alert's and
//! `explain`'s sentences alike.

use super::judge::{Role, Who};
use crate::model::units::duration_ms;
use crate::model::{Ending, RankEvent};
use crate::oom::dist::{Dist, JaxWhy, NcclCause};

/// `5-7,9` for srun's ranges.
fn task_list(tasks: &[(u32, u32)]) -> String {
    let parts: Vec<String> = tasks
        .iter()
        .map(|(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect();
    parts.join(",")
}

/// An event in words, about `who` (`at`: " at 06:06:43", or where it was read); `class`: an
/// OOM's class, when judged.
pub fn words(e: &RankEvent, who: Who, at: &str, class: Option<&str>) -> String {
    let w = who.label();
    let Some(f) = &e.failure else {
        return match &e.ending {
            Some(end) => format!("{w} {}{at}", end.words()),
            None => format!("{w} exited{at} with no failure line of its own"),
        };
    };
    let Some(d) = &f.dist else {
        return match (f.fault, class) {
            (Some(k), _) => format!("{w} died of {}{at}", k.words()),
            (None, Some(c)) => format!("{w} ran out of memory ({c}){at}"),
            (None, None) => format!("{w} ran out of memory{at}"),
        };
    };
    match d {
        Dist::WatchdogTimeout {
            op,
            seq,
            timeout_ms,
            ..
        } => format!(
            "{w} aborted by NCCL's watchdog{at} waiting on {op} #{seq} (timeout {})",
            duration_ms(*timeout_ms)
        ),
        Dist::NcclError {
            cause: NcclCause::Remote,
            ..
        } => format!("{w} lost its NCCL peer{at} (remote process exited or network error)"),
        Dist::NcclError { .. } => format!("{w} hit a CUDA error inside NCCL{at}"),
        Dist::Torchrun {
            rank_unreadable: Some(v),
            ..
        } if who == Who::Unknown => {
            format!("torchrun's summary{at} names a rank that cannot be one ({v})")
        }
        Dist::Torchrun {
            complete: false, ..
        } if who == Who::Unknown => {
            format!("torchrun's summary{at} is cut before it says which rank an entry is")
        }
        Dist::Torchrun {
            root,
            exitcode,
            signal,
            pid,
            host,
            ..
        } => {
            let code =
                exitcode.map_or_else(|| "no exit code said".into(), |c| format!("exitcode {c}"));
            let sig = signal
                .as_ref()
                .map_or_else(String::new, |s| format!(" ({s})"));
            let pid = pid.map_or_else(String::new, |p| format!(", pid {p}"));
            let host = host
                .as_ref()
                .map_or_else(String::new, |h| format!(" on {h}"));
            if *root {
                format!(
                    "{w} is torchrun's root cause (first observed failure){at}: {code}{sig}{pid}{host}"
                )
            } else if signal.as_deref() == Some("SIGTERM") {
                format!("{w} stopped by torchrun with SIGTERM{at}{pid}")
            } else {
                format!("{w} ended{at} with {code}{sig} in torchrun's summary{pid}")
            }
        }
        Dist::AgentFailed { exitcode, pid, .. } => {
            format!(
                "{w} failed first as torchrun's agent saw it{at}: exitcode {exitcode}, pid {pid}"
            )
        }
        Dist::Stopped { signal, .. } => format!("{w} stopped by its launcher with {signal}{at}"),
        Dist::SrunTasks {
            tasks, how, node, ..
        } => {
            let on = node
                .as_ref()
                .map_or_else(String::new, |n| format!(" on {n}"));
            let many = tasks.len() > 1 || tasks.first().is_some_and(|(a, b)| a != b);
            let name = if many { "tasks" } else { "task" };
            format!("srun: {name} {}{on}: {how}{at}", task_list(tasks))
        }
        Dist::StepCancelled { step, due } => {
            let due = due
                .as_ref()
                .map_or_else(String::new, |d| format!(" due to {}", d.to_lowercase()));
            format!("Slurm cancelled step {step}{due}{at}")
        }
        Dist::DeepspeedExit { code } if *code < 0 => {
            let sig = crate::oom::dist::signal_name(*code).unwrap_or("a signal");
            format!("{w} killed by {sig}{at} (DeepSpeed's launcher: return code {code})")
        }
        Dist::DeepspeedExit { code } => {
            format!("{w} exited with return code {code}{at} (DeepSpeed's launcher)")
        }
        Dist::JaxTasks { why, tasks } => {
            let ids: Vec<String> = tasks.iter().map(u32::to_string).collect();
            let who = if tasks.len() == 1 {
                w
            } else {
                format!("processes {}", ids.join(", "))
            };
            match why {
                JaxWhy::Heartbeat => {
                    format!("{who}: heartbeat timeout{at} (JAX's coordination service)")
                }
                JaxWhy::Barrier => {
                    format!("{who} never reached a barrier{at} (JAX's coordination service)")
                }
                JaxWhy::Unhealthy => {
                    format!("{who} stopped sending heartbeats{at} (JAX's coordination service)")
                }
            }
        }
        Dist::JaxFatal => {
            format!("{w} terminated by JAX's distributed service{at} (another task died)")
        }
        Dist::LauncherSignalled {
            launcher, signal, ..
        } => format!("{launcher} itself received {signal}{at} and stopped every rank"),
        Dist::DumpSignal {
            last_enqueued,
            last_completed,
            ..
        } if *last_enqueued < 0 => format!(
            "{w}'s own count{at}: no NCCL collective enqueued yet (last completed {last_completed})"
        ),
        Dist::DumpSignal {
            last_enqueued,
            last_completed,
            ..
        } => format!(
            "{w}'s own count{at}: last enqueued NCCL work #{last_enqueued}, last completed #{last_completed}"
        ),
    }
}

/// "rank 0's OOM", "rank 3's illegal memory access", "rank 3's failure": the root cause, short.
pub fn root_phrase(e: &RankEvent, who: Who) -> String {
    let w = who.label();
    match &e.failure {
        None => match &e.ending {
            Some(end) if end.raised_oom() => format!("{w}'s OOM"),
            Some(Ending::Raised { kind, .. }) => format!("{w}'s uncaught {kind}"),
            Some(Ending::Exit { code: Some(c) }) => format!("{w}'s exit with status {c}"),
            _ => format!("{w}'s exit"),
        },
        Some(f) if f.dist.is_none() => match f.fault {
            Some(k) => format!(
                "{w}'s {}",
                k.words().trim_start_matches("an ").trim_start_matches("a ")
            ),
            None => format!("{w}'s OOM"),
        },
        Some(_) => format!("{w}'s failure"),
    }
}

/// A later rank's event against the root cause (`root`: its short phrase and when): another
/// rank's own failure came after it; a launcher naming another rank first is said as such (the
/// root cause is the first failure with a line of its own); everything else is a consequence.
pub fn against_root(said: String, role: Role, root: Option<&str>) -> String {
    match (root, role) {
        (None, _) => said,
        (Some(r), Role::Own(_) | Role::Exited) => format!("{said}, after {r}"),
        (Some(r), Role::Named(_)) => {
            format!("{said}; the first failure with a line of its own is {r}")
        }
        (Some(r), Role::Followed) => format!("{said}: a consequence of {r}"),
        (Some(_), Role::Normal | Role::Survived | Role::Outside) => said,
    }
}
