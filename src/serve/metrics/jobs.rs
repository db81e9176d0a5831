//! `/metrics`' distributed jobs: the `job_id` and `rank` labels of a rank's per-process series,
//! and a small bounded set of series per job (its ranks here, world size, device memory, the
//! largest rank against the median, whether it grows alone) for at most `MAX_JOBS` jobs a host,
//! the jobs over that counted, so per-job labels cannot multiply series without bound.
//!
//! The job id is the launcher's id (`slurm:JOB.STEP`, `torchrun:RUN_ID`, `master:ADDR:PORT`, …),
//! read from the ranks' launcher variables: no command line and no other variable goes into a
//! label. Its label is named `job_id`, since Prometheus gives every scraped series a `job`
//! label of its own (the scrape job's name) and would rename one that came with the series.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::registry::Unit;

use super::{Labels, gauges};
use crate::sample::job::{MAX_JOB_ID, printable};
use crate::snapshot::jobs::JobDoc;
use crate::snapshot::{Process, Snapshot};

/// Jobs a host gives series of their own, at most (the largest by device memory first).
pub const MAX_JOBS: usize = 32;

/// A rank's job and its rank in it, by (pid, start time), for the per-process labels.
pub(super) struct RankLabels<'a>(HashMap<(u32, Option<&'a str>), (String, String)>);

impl<'a> RankLabels<'a> {
    pub(super) fn of(s: &'a Snapshot) -> Self {
        let mut map = HashMap::new();
        for j in &s.jobs {
            for r in j.ranks.iter().filter(|r| r.exited_at.is_none()) {
                let rank = r.rank.map(|n| n.to_string()).unwrap_or_default();
                map.insert((r.pid, r.started_at.as_deref()), (job_label(&j.id), rank));
            }
        }
        RankLabels(map)
    }

    /// `job_id` and `rank` for `p`'s series: empty for a process of no job (as `container` is
    /// for a process in none), and `rank` empty for a rank that could not be trusted.
    pub(super) fn push(&self, p: &Process, labels: &mut Labels<'_>) {
        let (job, rank) = self
            .0
            .get(&(p.pid, p.started_at.as_deref()))
            .cloned()
            .unwrap_or_default();
        labels.push(("job_id", job.into()));
        labels.push(("rank", rank.into()));
    }
}

/// The job id as a label value: printable, at most `MAX_JOB_ID` characters.
pub fn job_label(id: &str) -> String {
    printable(id, MAX_JOB_ID)
}

/// The jobs that have a running rank here, the largest by device memory first, then by id.
fn running(s: &Snapshot) -> Vec<&JobDoc> {
    let mut jobs: Vec<&JobDoc> = s
        .jobs
        .iter()
        .filter(|j| j.ranks.iter().any(|r| r.exited_at.is_none()))
        .collect();
    jobs.sort_by(|a, b| (b.device_total, &a.id).cmp(&(a.device_total, &b.id)));
    jobs
}

/// The per-job series and the jobs' count.
pub(super) fn encode(enc: &mut DescriptorEncoder, s: &Snapshot, host: &str) -> fmt::Result {
    let jobs = running(s);
    let hostname = || vec![("Hostname", Cow::Borrowed(host))];
    let total = jobs.len() as u64;
    let omitted = total.saturating_sub(MAX_JOBS as u64);
    let help = "Distributed jobs with a running rank on this host.";
    gauges(
        enc,
        ("gpumon_jobs", help, None),
        &[(hostname(), &total)],
        |n| Some(*n),
    )?;
    let help = "Jobs with a running rank here that get no gpumon_job_* series (over the cap).";
    gauges(
        enc,
        ("gpumon_jobs_omitted", help, None),
        &[(hostname(), &omitted)],
        |n| Some(*n),
    )?;
    let series: Vec<(Labels, &JobDoc)> = jobs
        .into_iter()
        .take(MAX_JOBS)
        .map(|j| {
            let mut labels = hostname();
            labels.push(("job_id", job_label(&j.id).into()));
            (labels, j)
        })
        .collect();
    let with_launcher: Vec<(Labels, &JobDoc)> = series
        .iter()
        .map(|(l, j)| {
            let mut l = l.clone();
            l.push(("launcher", launcher(j).into()));
            (l, *j)
        })
        .collect();
    gauges(
        enc,
        (
            "gpumon_job_ranks",
            "Running ranks of the job on this host.",
            None,
        ),
        &with_launcher,
        |j| Some(j.ranks.iter().filter(|r| r.exited_at.is_none()).count() as u64),
    )?;
    gauges(
        enc,
        (
            "gpumon_job_world_size",
            "The job's world size, as its ranks here say it.",
            None,
        ),
        &series,
        |j| j.world_size,
    )?;
    gauges(
        enc,
        (
            "gpumon_job_device_memory",
            "Device memory of the job's running ranks on this host.",
            Some(&Unit::Bytes),
        ),
        &series,
        |j| Some(j.device_total),
    )?;
    // The largest rank names itself in a `rank` label (one series a job at a time).
    let largest: Vec<(Labels, &JobDoc)> = series
        .iter()
        .filter_map(|(l, j)| {
            let i = j.imbalance.as_ref()?;
            let mut l = l.clone();
            l.push((
                "rank",
                i.rank.map(|r| r.to_string()).unwrap_or_default().into(),
            ));
            Some((l, *j))
        })
        .collect();
    gauges(
        enc,
        (
            "gpumon_job_imbalance",
            "The largest running rank's device memory over the median of the job's ranks here.",
            Some(&Unit::Other("ratio".into())),
        ),
        &largest,
        |j| j.imbalance.as_ref()?.ratio,
    )?;
    gauges(
        enc,
        (
            "gpumon_job_grows_alone",
            "1 while the largest rank grows 1 MiB/s or more and the job's other ranks here are flat.",
            None,
        ),
        &largest,
        |j| j.imbalance.as_ref().map(|i| u64::from(i.grows_alone)),
    )
}

/// The launcher as the snapshot names it (`torchrun`, `slurm`, `open_mpi`, …).
fn launcher(j: &JobDoc) -> String {
    match serde_json::to_value(j.launcher) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests;
