//! Slurm's word on a step's tasks (a task is a rank, `SLURM_PROCID`): srun's `srun: error:
//! node12: task 0: Exited with exit code 1`, `tasks 0-57,59-63: Terminated`, `task 1: Killed`,
//! `task 2: Out Of Memory` (yhrun and other srun builds say the same), and slurmstepd's `***
//! STEP 52222788.0 ON nid002888 CANCELLED AT 2026-04-29T23:36:37 DUE TO TASK FAILURE ***`.

use std::sync::LazyLock;

use regex_lite::Regex;

use super::{Dist, Found, MAX_TASKS, message_from, word};
use crate::oom::re;

static TASKS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\b[a-z]{0,8}run: error: (?P<node>[^:\s]{1,64}): tasks? (?P<list>[\d,\-]{1,1024}): (?P<how>[^\n]{1,120})",
    )
});
static EXIT: LazyLock<Regex> = LazyLock::new(|| re(r"Exited with exit code (?P<c>\d{1,4})"));
static STEP: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\*\*\* (?:STEP|JOB) (?P<id>[\w.+]{1,40}) ON (?P<node>\S{1,64}) CANCELLED AT \S{1,40}(?: DUE TO (?P<due>[A-Z][A-Z ]{0,39}?))? \*\*\*",
    )
});

pub(super) fn parse(body: &str) -> Option<Found> {
    let (tasks, cancelled) = (body.contains("run: error:"), body.contains("CANCELLED AT"));
    if !tasks && !cancelled {
        return None;
    }
    if let Some(c) = tasks.then(|| TASKS.captures(body)).flatten() {
        let tasks = ranges(&c["list"])?;
        let how = word(&c["how"]);
        let exit_code = EXIT.captures(&how).and_then(|e| e["c"].parse().ok());
        let one = match tasks.as_slice() {
            [(a, b)] if a == b => Some(*a),
            _ => None,
        };
        return Some(Found {
            key: format!("srun:{}:{how}", &c["list"]),
            dist: Dist::SrunTasks {
                tasks,
                how,
                exit_code,
                node: Some(word(&c["node"])),
            },
            rank: one,
            local_rank: None,
            message: message_from(body, c.get(0)?.start()),
            line: None,
        });
    }
    let c = STEP.captures(body)?;
    Some(Found {
        key: format!("step:{}", &c["id"]),
        dist: Dist::StepCancelled {
            step: word(&c["id"]),
            due: c.name("due").map(|d| word(d.as_str())),
        },
        rank: None,
        local_rank: None,
        message: message_from(body, c.get(0)?.start()),
        line: None,
    })
}

/// `0-57,59-63` as inclusive ranges (at most [`MAX_TASKS`]); `None` when it does not read.
fn ranges(list: &str) -> Option<Vec<(u32, u32)>> {
    let max = crate::oom::prefix::MAX_RANK;
    let mut out = Vec::new();
    for part in list.split(',').take(MAX_TASKS) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
        if a > b || b > max {
            return None;
        }
        out.push((a, b));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_lines() {
        let f = parse("srun: error: node12: task 0: Exited with exit code 1").unwrap();
        assert_eq!(f.rank, Some(0));
        assert_eq!(
            f.dist,
            Dist::SrunTasks {
                tasks: vec![(0, 0)],
                how: "Exited with exit code 1".into(),
                exit_code: Some(1),
                node: Some("node12".into()),
            }
        );
        let f = parse("srun: error: node12: tasks 1-3: Killed").unwrap();
        assert_eq!(f.rank, None);
        assert!(
            matches!(f.dist, Dist::SrunTasks { ref tasks, exit_code: None, .. } if *tasks == vec![(1, 3)])
        );
        // desihub/desispec#2744: every task but 58, terminated.
        let f = parse("srun: error: nid002888: tasks 0-57,59-63: Terminated").unwrap();
        assert!(
            matches!(f.dist, Dist::SrunTasks { ref tasks, .. } if *tasks == vec![(0, 57), (59, 63)])
        );
        // jiabowang/GAPIT#207: yhrun, Tianhe's srun.
        assert!(parse("yhrun: error: cnode1995: task 0: Killed").is_some());
    }

    #[test]
    fn step_cancelled() {
        // desihub/desispec#2744.
        let l = "[2026-04-29T23:36:37.809] error: *** STEP 52222788.0 ON nid002888 CANCELLED AT 2026-04-29T23:36:37 DUE TO TASK FAILURE ***";
        assert_eq!(
            parse(l).unwrap().dist,
            Dist::StepCancelled {
                step: "52222788.0".into(),
                due: Some("TASK FAILURE".into())
            }
        );
        // banyan-team/banyan-julia#6: cancelled, no reason given.
        let l = "slurmstepd: error: *** STEP 3737.0 ON compute-dy-t3large-2 CANCELLED AT 2021-08-03T16:28:28 ***";
        assert!(matches!(
            parse(l).unwrap().dist,
            Dist::StepCancelled { due: None, .. }
        ));
    }

    #[test]
    fn bad_task_lists_are_not_read() {
        for l in [
            "srun: error: node1: tasks 3-1: Killed",
            "srun: error: node1: task 99999999999: Killed",
            "srun: error: node1: tasks -: Killed",
            "srun: error: Task launch for StepId=125452.4 failed on node [NODENAME]: Unable to layout tasks",
        ] {
            assert!(parse(l).is_none(), "{l}");
        }
    }
}
