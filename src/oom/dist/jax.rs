//! JAX's coordination service (jax.distributed): `Task /job:jax_worker/replica:0/task:0
//! heartbeat timeout.`, `Barrier timed out. … Timed out task names: /job:jax_worker/replica:0/
//! task:1`, `The following tasks are unhealthy (stopped sending heartbeats):` followed by the
//! tasks one a line (jax 0.11.2 prints bare ids), and `Terminating process because the JAX
//! distributed service detected fatal errors`. A task's number is its process id, its rank.

use std::sync::LazyLock;

use regex_lite::Regex;

use super::{Dist, Found, JaxWhy, MAX_TASKS, message_from};
use crate::oom::re;

static HEARTBEAT: LazyLock<Regex> = LazyLock::new(|| {
    re(r"Task /job:[\w-]{1,40}/replica:\d{1,6}/task:(?P<t>\d{1,7}) heartbeat timeout")
});
static TASK: LazyLock<Regex> =
    LazyLock::new(|| re(r"/job:[\w-]{1,40}/replica:\d{1,6}/task:(?P<t>\d{1,7})"));
static BARE: LazyLock<Regex> =
    LazyLock::new(|| re(r"^\s*(?:/job:[\w-]{1,40}/replica:\d{1,6}/task:)?(?P<t>\d{1,7})\s*,?\s*$"));
pub(super) const FATAL: &str =
    "Terminating process because the JAX distributed service detected fatal errors";
pub(super) const UNHEALTHY: &str =
    "The following tasks are unhealthy (stopped sending heartbeats):";
pub(super) const BARRIER: &str = "Timed out task names:";
pub(super) const HEARTBEAT_WORDS: &str = "heartbeat timeout";

fn task(s: &str) -> Option<u32> {
    s.parse()
        .ok()
        .filter(|t| *t <= crate::oom::prefix::MAX_RANK)
}

fn found(why: JaxWhy, tasks: Vec<u32>, message: String) -> Found {
    Found {
        key: format!("jax:{why:?}:{tasks:?}"),
        rank: None,
        local_rank: None,
        dist: Dist::JaxTasks { why, tasks },
        message,
        line: None,
    }
}

pub(super) fn parse(body: &str) -> Option<Found> {
    if let Some(c) = body
        .contains(HEARTBEAT_WORDS)
        .then(|| HEARTBEAT.captures(body))
        .flatten()
    {
        let t = task(&c["t"])?;
        let at = c.get(0)?.start();
        return Some(found(JaxWhy::Heartbeat, vec![t], message_from(body, at)));
    }
    let at = body.find(FATAL)?;
    Some(Found {
        key: "jax:fatal".into(),
        dist: Dist::JaxFatal,
        rank: None,
        local_rank: None,
        message: message_from(body, at),
        line: None,
    })
}

/// Tasks listed after a header, one a line (or on the header's own line).
#[derive(Debug)]
pub(super) struct List {
    line: u64,
    why: JaxWhy,
    tasks: Vec<u32>,
    message: String,
}

impl List {
    /// A header whose tasks follow; a barrier's header with its tasks on its own line is read
    /// whole (and then ends at the next line).
    pub fn start(line_no: u64, body: &str) -> Option<List> {
        let (why, at) = if let Some(i) = body.find(UNHEALTHY) {
            (JaxWhy::Unhealthy, i)
        } else if let Some(i) = body.find(BARRIER) {
            (JaxWhy::Barrier, i)
        } else {
            return None;
        };
        let from = at
            + if why == JaxWhy::Unhealthy {
                UNHEALTHY.len()
            } else {
                BARRIER.len()
            };
        let tasks = TASK
            .captures_iter(&body[from..])
            .filter_map(|c| task(&c["t"]))
            .take(MAX_TASKS)
            .collect();
        let start = body
            .get(..at)
            .and_then(|h| {
                h.rfind("DEADLINE_EXCEEDED")
                    .or_else(|| h.rfind("UNAVAILABLE"))
            })
            .unwrap_or(at);
        Some(List {
            line: line_no,
            why,
            tasks,
            message: message_from(body, start),
        })
    }

    /// Takes a line that lists a task; `false`: the list ended before it.
    pub fn take(&mut self, body: &str) -> bool {
        let Some(c) = BARE.captures(body) else {
            return false;
        };
        if let Some(t) = task(&c["t"])
            && self.tasks.len() < MAX_TASKS
            && !self.tasks.contains(&t)
        {
            self.tasks.push(t);
        }
        true
    }

    /// The event, if any task was named.
    pub fn done(self) -> Option<Found> {
        if self.tasks.is_empty() {
            return None;
        }
        let mut f = found(self.why, self.tasks, self.message);
        f.line = Some(self.line);
        Some(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(lines: &[&str]) -> Option<Found> {
        let mut l = List::start(1, lines[0])?;
        for body in &lines[1..] {
            if !l.take(body) {
                break;
            }
        }
        l.done()
    }

    #[test]
    fn unhealthy_tasks_one_a_line() {
        // jax 0.11.2 on a 2xH100 (shared/reference/distributed-jobs.md): process 1 died.
        let f = list(&[
            "E1124 06:12:01.123456  4242 coordination_service.cc:1518] Use error polling to propagate the following error to all tasks: UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):",
            "1",
            "The tasks have crashed. Check the task logs for an earlier error, or scheduler events (e.g. preemption, eviction) to debug further.",
        ])
        .unwrap();
        assert_eq!(
            f.dist,
            Dist::JaxTasks {
                why: JaxWhy::Unhealthy,
                tasks: vec![1]
            }
        );
        assert!(f.message.starts_with("Use error polling") || f.message.starts_with("UNAVAILABLE"));
        let f = list(&[
            "The following tasks are unhealthy (stopped sending heartbeats):",
            "/job:jax_worker/replica:0/task:2",
            "/job:jax_worker/replica:0/task:3",
        ])
        .unwrap();
        assert!(matches!(f.dist, Dist::JaxTasks { ref tasks, .. } if *tasks == vec![2, 3]));
        assert!(
            list(&[
                "The following tasks are unhealthy (stopped sending heartbeats):",
                "then words"
            ])
            .is_none()
        );
    }

    #[test]
    fn barrier_heartbeat_and_fatal() {
        let f = list(&["jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Id: PjitCompiler::Compile. Timed out task names: /job:jax_worker/replica:0/task:1", "Traceback"]).unwrap();
        assert!(
            matches!(f.dist, Dist::JaxTasks { why: JaxWhy::Barrier, ref tasks } if *tasks == vec![1])
        );
        assert!(f.message.contains("DEADLINE_EXCEEDED: Barrier timed out"));
        let f = parse("E0124 12:00:00.000 coordination_service.cc:1] Task /job:jax_worker/replica:0/task:0 heartbeat timeout. This indicates that the remote task has failed, got preempted, or crashed unexpectedly.").unwrap();
        assert_eq!(
            f.dist,
            Dist::JaxTasks {
                why: JaxWhy::Heartbeat,
                tasks: vec![0]
            }
        );
        let f = parse("F1124 06:12:02.000000  4242 client.h:86] Terminating process because the JAX distributed service detected fatal errors. This most likely indicates that another task died; see the other task logs for more details.").unwrap();
        assert_eq!(f.dist, Dist::JaxFatal);
        assert!(f.message.starts_with("Terminating process"));
        assert!(parse("Task /job:jax_worker/replica:0/task:99999999 heartbeat timeout").is_none());
    }
}
