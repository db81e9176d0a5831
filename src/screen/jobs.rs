//! The job view (`J`): the process table grouped by distributed job. A line a job (its id,
//! launcher, ranks, GPUs, memory and imbalance) above its processes in rank order, then the
//! processes of no job in the table's order. Derived in the screen's update with the rows; the
//! job lines are not selectable (keys skip them, a click on one selects its first rank).

use crate::model::{Machine, ProcessTrack};
use crate::screen::Screen;

/// A job's line in the job view, drawn just above its first process.
#[derive(Debug, Clone, PartialEq)]
pub struct JobLine {
    /// Index into the machine's `jobs`.
    pub job: usize,
    /// Index into `Screen::rows` of its first process shown.
    pub first: usize,
    /// Its running ranks on this machine.
    pub here: usize,
    /// The GPUs its running ranks hold memory on, by index.
    pub gpus: Vec<u32>,
    /// Each running rank's device memory, in rank order (`None`: no reading).
    pub per_rank: Vec<Option<u64>>,
}

/// What one line of the table holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableLine {
    /// `Screen::job_lines[n]`.
    Job(usize),
    /// `Screen::rows[n]`.
    Process(usize),
}

impl Screen {
    /// Lines the table has: a row a process and, in the job view, a line a job.
    pub fn table_len(&self) -> usize {
        self.rows.len() + self.job_lines.len()
    }

    /// The table line of `rows[row]`.
    pub fn line_of(&self, row: usize) -> usize {
        row + self.job_lines.iter().take_while(|j| j.first <= row).count()
    }

    /// What table line `line` holds.
    pub fn table_line(&self, line: usize) -> Option<TableLine> {
        let mut above = 0;
        for (n, j) in self.job_lines.iter().enumerate() {
            let at = j.first + n;
            if line == at {
                return Some(TableLine::Job(n));
            }
            if line < at {
                break;
            }
            above = n + 1;
        }
        let row = line - above;
        (row < self.rows.len()).then_some(TableLine::Process(row))
    }
}

/// Orders `rows` (already in the table's order) by job, and the job lines above them: the jobs
/// in the order of their first process in the table's order, each job's processes by rank (a
/// process on several GPUs: its own GPU first), then the processes of no job as they were.
pub(super) fn group(machine: &Machine, rows: &mut [&ProcessTrack], lines: &mut Vec<JobLine>) {
    lines.clear();
    if machine.jobs.is_empty() {
        return;
    }
    // The jobs in the order they first come.
    let mut order: Vec<usize> = Vec::new();
    let job_of = |t: &ProcessTrack| {
        let id = t.sample.rank.as_ref()?.job.as_deref()?;
        machine.jobs.iter().position(|j| j.id == id)
    };
    let keyed: Vec<((usize, usize, bool), Option<usize>)> = rows
        .iter()
        .map(|t| {
            let Some(job) = job_of(t) else {
                return ((usize::MAX, 0, false), None);
            };
            let place = order.iter().position(|j| *j == job).unwrap_or_else(|| {
                order.push(job);
                order.len() - 1
            });
            let ranks = &machine.jobs[job].ranks;
            let at = ranks
                .iter()
                .position(|r| r.pid == t.key.pid && r.start_time == t.key.start_time);
            let elsewhere = at.is_some_and(|i| ranks[i].gpu != t.key.gpu_uuid);
            ((place, at.unwrap_or(usize::MAX), elsewhere), Some(job))
        })
        .collect();
    let mut sorted: Vec<(usize, &ProcessTrack)> = rows.iter().copied().enumerate().collect();
    // Stable: the table's order stays within each key.
    sorted.sort_by_key(|(i, _)| keyed[*i].0);
    let jobs: Vec<Option<usize>> = sorted.iter().map(|(i, _)| keyed[*i].1).collect();
    for (row, (_, t)) in rows.iter_mut().zip(sorted) {
        *row = t;
    }
    let mut last = None;
    for (i, job) in jobs.into_iter().enumerate() {
        let Some(job) = job else { break };
        if last == Some(job) {
            continue;
        }
        last = Some(job);
        let j = &machine.jobs[job];
        let running = || j.ranks.iter().filter(|r| r.running());
        let mut gpus: Vec<u32> = j
            .gpus
            .iter()
            .filter_map(|u| machine.gpus.get(u).map(|g| g.sample.index))
            .collect();
        gpus.sort_unstable();
        lines.push(JobLine {
            job,
            first: i,
            here: running().count(),
            gpus,
            per_rank: running().map(|r| r.device).collect(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn screen(rows: usize, firsts: &[usize]) -> Screen {
        let key = |pid| crate::model::ProcKey {
            pid,
            start_time: None,
            gpu_uuid: String::new(),
        };
        Screen {
            rows: (0..rows).map(|p| key(u32::try_from(p).unwrap())).collect(),
            job_lines: firsts
                .iter()
                .map(|&first| JobLine {
                    job: 0,
                    first,
                    here: 0,
                    gpus: Vec::new(),
                    per_rank: Vec::new(),
                })
                .collect(),
            ..Screen::default()
        }
    }

    #[test]
    fn job_lines_sit_above_their_first_process() {
        // Rows 0-1 of one job, 2-4 of another, 5 of none.
        let s = screen(6, &[0, 2]);
        assert_eq!(s.table_len(), 8);
        let lines: Vec<TableLine> = (0..8).filter_map(|l| s.table_line(l)).collect();
        use TableLine::{Job, Process};
        assert_eq!(
            lines,
            [
                Job(0),
                Process(0),
                Process(1),
                Job(1),
                Process(2),
                Process(3),
                Process(4),
                Process(5)
            ]
        );
        assert_eq!(s.table_line(8), None);
        for row in 0..6 {
            assert_eq!(s.table_line(s.line_of(row)), Some(Process(row)));
        }
        let flat = screen(3, &[]);
        assert_eq!(flat.line_of(2), 2);
        assert_eq!(flat.table_line(2), Some(Process(2)));
    }
}
