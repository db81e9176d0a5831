//! Distributed jobs from Prometheus: a rank's per-process series carry `job_id` and `rank`
//! (gpumon serve's labels), its host's `gpumon_job_ranks` the launcher and
//! `gpumon_job_world_size` the world size; together they give back the process's `Rank`, so
//! ranks of one job on several hosts group as one in the fleet overview.

use std::collections::BTreeMap;

use crate::sample::job::{MAX_JOB_ID, printable};
use crate::sample::{Launcher, Rank};

/// What a host's per-job series say of each job, by id.
#[derive(Debug, Default)]
pub struct Facts(BTreeMap<String, Fact>);

#[derive(Debug, Default, Clone, Copy)]
struct Fact {
    launcher: Option<Launcher>,
    world_size: Option<u32>,
}

impl Facts {
    /// Takes in a per-job series (`true`), or leaves it (`false`: not one).
    pub fn add(&mut self, name: &str, label: impl Fn(&str) -> Option<String>, value: u64) -> bool {
        let Some(job) = label("job_id").filter(|j| !j.is_empty()) else {
            return name.starts_with("gpumon_job_");
        };
        match name {
            "gpumon_job_ranks" => {
                let launcher = label("launcher")
                    .and_then(|l| serde_json::from_value::<Launcher>(l.into()).ok());
                self.0.entry(job).or_default().launcher = launcher;
            }
            "gpumon_job_world_size" => {
                self.0.entry(job).or_default().world_size =
                    u32::try_from(value).ok().filter(|w| *w > 0);
            }
            _ => return name.starts_with("gpumon_job_"),
        }
        true
    }

    /// Takes in what another instance reported for the same host.
    pub fn merge(&mut self, other: Facts) {
        for (job, f) in other.0 {
            let mine = self.0.entry(job).or_default();
            mine.launcher = f.launcher.or(mine.launcher);
            mine.world_size = f.world_size.or(mine.world_size);
        }
    }

    /// The rank a process's series labels say, with what its host's job series add; `None`
    /// for a process of no job (an empty or absent `job_id`).
    pub fn rank(&self, labels: Option<&BTreeMap<String, String>>) -> Option<Rank> {
        let labels = labels?;
        let job = labels.get("job_id").filter(|j| !j.is_empty())?;
        let job = printable(job, MAX_JOB_ID);
        let fact = self.0.get(&job).copied().unwrap_or_default();
        let rank = labels.get("rank").and_then(|r| r.parse::<u32>().ok());
        let problem = rank.is_none().then(|| {
            "its host's gpumon could not trust its rank (an empty rank label)".to_string()
        });
        Some(Rank {
            launcher: fact.launcher.unwrap_or_else(|| launcher_of(&job)),
            job: Some(job),
            rank,
            world_size: fact.world_size,
            local_rank: None,
            node: None,
            problem,
            inside: None,
        })
    }
}

/// The launcher a job id names, for a job its host gave no series of its own (over the cap):
/// `env` where the id does not say (a rendezvous address, an MPI namespace).
fn launcher_of(job: &str) -> Launcher {
    match job.split_once(':').map(|(kind, _)| kind) {
        Some("slurm") => Launcher::Slurm,
        Some("torchrun") => Launcher::Torchrun,
        Some("jax") => Launcher::Jax,
        _ => Launcher::Env,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_ranks_labels_and_its_hosts_job_series_give_back_its_rank() {
        let mut facts = Facts::default();
        let job = labels(&[
            ("job_id", "master:10.0.0.1:29500"),
            ("launcher", "deepspeed"),
        ]);
        let get = |l: &BTreeMap<String, String>| {
            let l = l.clone();
            move |k: &str| l.get(k).cloned()
        };
        assert!(facts.add("gpumon_job_ranks", get(&job), 4));
        assert!(facts.add("gpumon_job_world_size", get(&job), 16));
        assert!(facts.add("gpumon_job_device_memory_bytes", get(&job), 1));
        assert!(!facts.add("gpumon_gpu_memory_used_bytes", get(&labels(&[])), 1));
        let r = facts
            .rank(Some(&labels(&[
                ("job_id", "master:10.0.0.1:29500"),
                ("rank", "9"),
            ])))
            .unwrap();
        assert_eq!(
            (
                r.job.as_deref(),
                r.launcher,
                r.rank,
                r.world_size,
                r.problem
            ),
            (
                Some("master:10.0.0.1:29500"),
                Launcher::Deepspeed,
                Some(9),
                Some(16),
                None
            )
        );
    }

    #[test]
    fn no_job_label_is_no_rank_and_a_bad_rank_label_is_an_untrusted_rank() {
        let facts = Facts::default();
        assert_eq!(facts.rank(None), None);
        assert_eq!(
            facts.rank(Some(&labels(&[("job_id", ""), ("rank", "")]))),
            None
        );
        let r = facts
            .rank(Some(&labels(&[("job_id", "slurm:42.0"), ("rank", "x1")])))
            .unwrap();
        assert_eq!(
            (r.launcher, r.rank, r.world_size),
            (Launcher::Slurm, None, None)
        );
        assert!(r.problem.unwrap().contains("could not trust its rank"));
        let long = "j".repeat(500);
        let r = facts
            .rank(Some(&labels(&[("job_id", &long), ("rank", "0")])))
            .unwrap();
        assert_eq!(r.job.unwrap().chars().count(), MAX_JOB_ID);
        assert_eq!(r.launcher, Launcher::Env);
    }
}
