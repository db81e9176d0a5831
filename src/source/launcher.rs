//! Which rank of which distributed job a process is, from its launcher's variables in its initial
//! environment (`/proc/PID/environ`) and its command line, and from what its probe read inside it.
//!
//! Only the variables in [`LAUNCH_VARIABLES`] are ever kept (the rest of an environment may hold
//! secrets). Pure functions over what was read: `procfs` reads, the live source merges.

use std::collections::BTreeMap;

use crate::sample::job::{Inside, Launcher, MAX_JOB_ID, Rank, printable};

/// The launchers' variables that say who is which rank (`shared/reference/distributed-jobs.md`).
pub const LAUNCH_VARIABLES: &[&str] = &[
    // torchrun, DeepSpeed, Kubeflow, and `env://` by hand
    "RANK",
    "LOCAL_RANK",
    "GROUP_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCHELASTIC_RUN_ID",
    "TORCHELASTIC_RESTART_COUNT",
    // DeepSpeed's launcher
    "CROSS_RANK",
    "CROSS_SIZE",
    // Kubeflow's PyTorchJob (elastic) and pods
    "PET_NNODES",
    "PET_NODE_RANK",
    "KUBERNETES_SERVICE_HOST",
    // Slurm's srun
    "SLURM_JOB_ID",
    "SLURM_STEP_ID",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_NODEID",
    "SLURM_NTASKS",
    "SLURM_NPROCS",
    // Open MPI (PMIx) and MPICH
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_NODE_RANK",
    "PMIX_NAMESPACE",
    "PMI_RANK",
    "PMI_SIZE",
    "MPI_LOCALRANKID",
    // JAX: the coordinator it reads itself; process id and count as scripts commonly pass them
    "JAX_COORDINATOR_ADDRESS",
    "JAX_PROCESS_ID",
    "JAX_NUM_PROCESSES",
];

/// What the process was started as: its launcher's variables, its arguments, the host it runs
/// on and the process that started it (a rendezvous on a loopback address is this host's alone).
pub struct Launch<'a> {
    pub vars: &'a BTreeMap<String, String>,
    pub args: &'a [String],
    pub host: &'a str,
    pub parent: Option<u32>,
}

/// The rank `launch` describes; `None` when no launcher's variables are there.
pub fn rank(launch: &Launch<'_>) -> Option<Rank> {
    let v = launch.vars;
    let has = |k: &str| v.contains_key(k);
    let arg_local_rank = local_rank_arg(launch.args);
    let launcher = if has("TORCHELASTIC_RUN_ID") {
        Launcher::Torchrun
    } else if has("CROSS_RANK") || has("CROSS_SIZE") || (has("RANK") && arg_local_rank.is_some()) {
        Launcher::Deepspeed
    } else if has("PET_NNODES")
        || has("PET_NODE_RANK")
        || (has("KUBERNETES_SERVICE_HOST") && has("RANK") && has("MASTER_ADDR"))
    {
        Launcher::Kubeflow
    } else if has("SLURM_PROCID") && has("SLURM_JOB_ID") {
        Launcher::Slurm
    } else if has("OMPI_COMM_WORLD_RANK") {
        Launcher::OpenMpi
    } else if has("PMI_RANK") {
        Launcher::Mpich
    } else if has("RANK") && (has("WORLD_SIZE") || has("MASTER_ADDR")) {
        Launcher::Env
    } else if has("JAX_COORDINATOR_ADDRESS") {
        Launcher::Jax
    } else {
        return None;
    };
    let (rank_var, size_var, local_var, node_var) = match launcher {
        Launcher::Torchrun | Launcher::Env => ("RANK", "WORLD_SIZE", "LOCAL_RANK", "GROUP_RANK"),
        Launcher::Deepspeed => ("RANK", "WORLD_SIZE", "LOCAL_RANK", "CROSS_RANK"),
        Launcher::Kubeflow => ("RANK", "WORLD_SIZE", "LOCAL_RANK", "PET_NODE_RANK"),
        Launcher::Slurm => (
            "SLURM_PROCID",
            "SLURM_NTASKS",
            "SLURM_LOCALID",
            "SLURM_NODEID",
        ),
        Launcher::OpenMpi => (
            "OMPI_COMM_WORLD_RANK",
            "OMPI_COMM_WORLD_SIZE",
            "OMPI_COMM_WORLD_LOCAL_RANK",
            "OMPI_COMM_WORLD_NODE_RANK",
        ),
        Launcher::Mpich => ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", ""),
        Launcher::Jax | Launcher::Probe => ("JAX_PROCESS_ID", "JAX_NUM_PROCESSES", "", ""),
    };
    let mut problems = Vec::new();
    let mut num = |name: &str| -> Option<u32> {
        let value = v.get(name)?;
        match value.trim().parse::<u32>() {
            Ok(n) => Some(n),
            Err(_) => {
                problems.push(format!(
                    "{name} is not a number ({:?})",
                    printable(value, 24)
                ));
                None
            }
        }
    };
    let mut rank = num(rank_var);
    let world_size = num(size_var).or_else(|| {
        (launcher == Launcher::Slurm)
            .then(|| num("SLURM_NPROCS"))
            .flatten()
    });
    let local_rank = num(local_var).or(arg_local_rank);
    let node = num(node_var);
    // Under srun, a RANK set beside SLURM_PROCID must say the same.
    if launcher == Launcher::Slurm
        && let (Some(r), Some(env_rank)) = (rank, num("RANK"))
        && r != env_rank
    {
        problems.push(format!("RANK says {env_rank}, SLURM_PROCID says {r}"));
        rank = None;
    }
    match (rank, world_size) {
        (_, Some(0)) => problems.push(format!("{size_var} is 0")),
        (Some(r), Some(w)) if r >= w => {
            problems.push(format!("{rank_var} {r} is not below {size_var} {w}"));
            rank = None;
        }
        _ => {}
    }
    if problems.iter().any(|p| p.starts_with(rank_var)) {
        rank = None;
    }
    Some(Rank {
        job: job_id(launcher, launch),
        launcher,
        rank,
        world_size: world_size.filter(|w| *w > 0),
        local_rank,
        node,
        problem: (!problems.is_empty()).then(|| problems.join("; ")),
        inside: None,
    })
}

/// DeepSpeed's launcher passes `--local_rank=N` (or `--local_rank N`) to each process.
fn local_rank_arg(args: &[String]) -> Option<u32> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if let Some(n) = a.strip_prefix("--local_rank=") {
            return n.parse().ok();
        }
        if a == "--local_rank" {
            return it.next()?.parse().ok();
        }
    }
    None
}

/// The id every rank of the job shares (see `Rank::job`).
fn job_id(launcher: Launcher, launch: &Launch<'_>) -> Option<String> {
    let v = launch.vars;
    let get = |k: &str| v.get(k).map(|s| s.trim()).filter(|s| !s.is_empty());
    let slurm = || {
        get("SLURM_JOB_ID").map(|j| match get("SLURM_STEP_ID") {
            Some(step) => format!("slurm:{j}.{step}"),
            None => format!("slurm:{j}"),
        })
    };
    // torchrun's agent is the parent of every rank it starts on a host.
    let agent = (launcher == Launcher::Torchrun)
        .then_some(launch.parent)
        .flatten();
    let master = || {
        let addr = get("MASTER_ADDR")?;
        Some(rendezvous(
            "master",
            addr,
            get("MASTER_PORT"),
            launch.host,
            agent,
        ))
    };
    let id = match launcher {
        Launcher::Torchrun => get("TORCHELASTIC_RUN_ID")
            .filter(|r| !r.eq_ignore_ascii_case("none"))
            .map(|r| format!("torchrun:{r}"))
            .or_else(master)
            .or_else(slurm),
        Launcher::Slurm => slurm(),
        Launcher::Deepspeed | Launcher::Kubeflow | Launcher::Env => master().or_else(slurm),
        Launcher::OpenMpi => get("PMIX_NAMESPACE")
            .map(|ns| format!("mpi:{ns}"))
            .or_else(slurm)
            .or_else(|| Some(format!("mpi:{}/{}", launch.host, launch.parent?))),
        Launcher::Mpich => {
            slurm().or_else(|| Some(format!("mpi:{}/{}", launch.host, launch.parent?)))
        }
        Launcher::Jax | Launcher::Probe => get("JAX_COORDINATOR_ADDRESS")
            .map(|a| coordinator(a, launch.host))
            .or_else(slurm),
    }?;
    Some(printable(&id, MAX_JOB_ID))
}

/// `kind:addr:port`, or for a loopback address `kind:host/addr:port[/agent]`: only processes of
/// this host can meet there.
fn rendezvous(
    kind: &str,
    addr: &str,
    port: Option<&str>,
    host: &str,
    agent: Option<u32>,
) -> String {
    let at = match port {
        Some(p) => format!("{addr}:{p}"),
        None => addr.to_string(),
    };
    if !is_loopback(addr) {
        return format!("{kind}:{at}");
    }
    match agent {
        Some(a) => format!("{kind}:{host}/{at}/{a}"),
        None => format!("{kind}:{host}/{at}"),
    }
}

/// JAX's coordinator `host:port` as a job id.
fn coordinator(address: &str, host: &str) -> String {
    let (addr, port) = match address.rsplit_once(':') {
        Some((a, p)) if !a.ends_with(':') => (a, Some(p)),
        _ => (address, None),
    };
    rendezvous("jax", addr.trim_matches(['[', ']']), port, host, None)
}

fn is_loopback(addr: &str) -> bool {
    let a = addr.trim_matches(['[', ']']);
    a.eq_ignore_ascii_case("localhost")
        || a.starts_with("127.")
        || a == "::1"
        || a == "0.0.0.0"
        || a.is_empty()
}

/// The rank as the launcher's variables (`env`) and the process itself (`inside`, from its
/// probe) say it. The process's own word wins where they disagree, and the disagreement is kept
/// as a problem; a process with no launcher variables that initialised a process group is a rank
/// its probe names.
pub fn merge(env: Option<Rank>, inside: Option<Inside>, host: &str) -> Option<Rank> {
    match (env, inside) {
        (env, None) => env,
        (Some(mut r), Some(i)) => {
            let mut problems: Vec<String> = r.problem.take().into_iter().collect();
            if let (Some(said), Some(own)) = (r.rank, i.rank)
                && said != own
            {
                problems.push(format!(
                    "its launcher says rank {said}, {} says {own}",
                    source_of(&i)
                ));
            }
            if let (Some(said), Some(own)) = (r.world_size, i.world_size)
                && said != own
            {
                problems.push(format!(
                    "its launcher says {said} ranks, {} says {own}",
                    source_of(&i)
                ));
            }
            r.rank = i.rank.or(r.rank);
            r.world_size = i.world_size.or(r.world_size);
            r.problem = (!problems.is_empty()).then(|| problems.join("; "));
            r.inside = Some(i);
            Some(r)
        }
        (None, Some(i)) => {
            let job = i
                .run_id
                .as_deref()
                .filter(|r| !r.eq_ignore_ascii_case("none") && !r.is_empty())
                .map(|r| format!("torchrun:{r}"))
                .or_else(|| {
                    let m = i.master.as_deref()?;
                    Some(match i.framework {
                        crate::sample::Framework::Jax => coordinator(m, host),
                        _ => {
                            let (addr, port) = match m.rsplit_once(':') {
                                Some((a, p)) => (a, Some(p)),
                                None => (m, None),
                            };
                            rendezvous("master", addr, port, host, None)
                        }
                    })
                })
                .map(|id| printable(&id, MAX_JOB_ID));
            Some(Rank {
                job,
                launcher: Launcher::Probe,
                rank: i.rank,
                world_size: i.world_size,
                local_rank: None,
                node: None,
                problem: None,
                inside: Some(i),
            })
        }
    }
}

fn source_of(i: &Inside) -> &'static str {
    match i.framework {
        crate::sample::Framework::Jax => "jax.distributed",
        _ => "torch.distributed",
    }
}

#[cfg(test)]
mod tests;
