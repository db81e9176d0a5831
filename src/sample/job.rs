//! Which distributed job a process belongs to and which rank it is in it: read from its launcher's
//! variables in its initial environment (torchrun, Slurm, Open MPI, MPICH, DeepSpeed, Kubeflow,
//! JAX) and, where the allocator probe runs, from `torch.distributed` or JAX inside the process.
//!
//! Values come from someone else's environment: they are kept printable and short, and a value
//! that does not hold together (a rank not below the world size, a word where a number belongs,
//! two launchers that disagree) leaves the rank unknown with the reason in `problem`: a failure's
//! `[rankN]:` line is never joined on a rank gpumon could not trust.

use serde::{Deserialize, Serialize};

use super::Framework;

/// Longest job id kept, in characters.
pub const MAX_JOB_ID: usize = 96;

/// What started the process as one rank of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Launcher {
    Torchrun,
    Slurm,
    OpenMpi,
    Mpich,
    Deepspeed,
    Kubeflow,
    Jax,
    /// `RANK`, `WORLD_SIZE` and `MASTER_ADDR` set by hand or by a launcher gpumon does not name.
    Env,
    /// No launcher variables: the process said it itself, through the probe.
    Probe,
}

impl Launcher {
    /// The word for it on screen and in text output.
    pub fn label(self) -> &'static str {
        match self {
            Launcher::Torchrun => "torchrun",
            Launcher::Slurm => "srun",
            Launcher::OpenMpi => "mpirun",
            Launcher::Mpich => "mpich",
            Launcher::Deepspeed => "deepspeed",
            Launcher::Kubeflow => "kubeflow",
            Launcher::Jax => "jax",
            Launcher::Env => "env",
            Launcher::Probe => "probe",
        }
    }
}

/// What the process itself says of its place in the job, read by the allocator probe from
/// `torch.distributed` or JAX's distributed state (never imported by the probe: only read from
/// `sys.modules` once the job has initialised it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inside {
    /// `pytorch` or `jax`.
    pub framework: Framework,
    /// The process group's backend (`nccl`, `gloo`, …); `None` where the framework has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world_size: Option<u32>,
    /// `host:port` of the rendezvous (`MASTER_ADDR:MASTER_PORT` as the process set them, or
    /// JAX's coordinator address).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master: Option<String>,
    /// torchrun's run id as the process sees it (`TORCHELASTIC_RUN_ID`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

impl Inside {
    /// Whether the process talks to its peers through NCCL.
    pub fn nccl(&self) -> bool {
        self.backend.as_deref().is_some_and(|b| {
            b.split([':', ','])
                .any(|part| part.trim().eq_ignore_ascii_case("nccl"))
        })
    }
}

/// A process's place in a distributed job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rank {
    /// The job's id, the same on every rank of the job, on every host: `slurm:52222788.0`,
    /// `torchrun:<run id>`, `master:10.0.0.1:29500`, `mpi:<namespace>`, `jax:<coordinator>`; a
    /// rendezvous on a loopback address is named with its host and the launching process
    /// (`master:gpu-07/127.0.0.1:29500/1432`), as it cannot span hosts. `None`: the process is a
    /// rank, but nothing names its job (it is shown alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    pub launcher: Launcher,
    /// `None` when it could not be trusted (`problem` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_rank: Option<u32>,
    /// The node's rank in the job (`GROUP_RANK`, `SLURM_NODEID`, `OMPI_COMM_WORLD_NODE_RANK`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    /// What does not hold together in what was read, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// What the process said itself through the probe, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inside: Option<Inside>,
}

impl Rank {
    /// Whether it runs NCCL: its probe saw a NCCL process group (`None`: not probed, or the
    /// probe saw no process group yet).
    pub fn nccl(&self) -> Option<bool> {
        self.inside.as_ref().map(Inside::nccl)
    }

    /// "rank 0/2", "rank ?/2" (untrusted), "rank 3".
    pub fn short(&self) -> String {
        let r = self.rank.map_or_else(|| "?".to_string(), |r| r.to_string());
        match self.world_size {
            Some(w) => format!("{r}/{w}"),
            None => r,
        }
    }
}

/// `s` cut to `max` printable characters: control characters become `?`, a longer value ends
/// in `…` (the value came from another process's environment).
pub fn printable(s: &str, max: usize) -> String {
    let mut out: String = s
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .take(max)
        .collect();
    if s.chars().count() > max {
        out.pop();
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rank_reads_back_and_leaves_out_what_is_absent() {
        let r = Rank {
            job: Some("slurm:4242.0".into()),
            launcher: Launcher::Slurm,
            rank: Some(1),
            world_size: Some(2),
            local_rank: Some(1),
            node: None,
            problem: None,
            inside: Some(Inside {
                framework: Framework::Pytorch,
                backend: Some("cuda:nccl,cpu:gloo".into()),
                rank: Some(1),
                world_size: Some(2),
                master: None,
                run_id: None,
            }),
        };
        let json = serde_json::to_value(&r).unwrap();
        assert!(json.get("node").is_none());
        assert_eq!(json["launcher"], "slurm");
        assert_eq!(serde_json::from_value::<Rank>(json).unwrap(), r);
        assert_eq!(r.nccl(), Some(true));
        assert_eq!(r.short(), "1/2");
    }

    #[test]
    fn values_from_an_environment_are_made_printable_and_short() {
        assert_eq!(printable("a\x1b[2Jb", 10), "a?[2Jb");
        assert_eq!(printable("abcdef", 4), "abc…");
        assert_eq!(printable("abcd", 4), "abcd");
    }
}
