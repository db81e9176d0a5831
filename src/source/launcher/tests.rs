//! The launchers' environments as each launcher sets them (shared/reference/distributed-jobs.md),
//! and environments that conflict or lie.

use super::*;
use crate::sample::Framework;

fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect()
}

fn rank_of(pairs: &[(&str, &str)], args: &[&str], parent: Option<u32>) -> Option<Rank> {
    let v = vars(pairs);
    let args: Vec<String> = args.iter().map(|a| (*a).to_string()).collect();
    rank(&Launch {
        vars: &v,
        args: &args,
        host: "gpu-07",
        parent,
    })
}

#[test]
fn torchrun_ranks_share_the_run_id_or_the_agent_and_its_rendezvous() {
    let torchrun = |run_id: &str, rank: &str| {
        rank_of(
            &[
                ("RANK", rank),
                ("LOCAL_RANK", rank),
                ("GROUP_RANK", "0"),
                ("WORLD_SIZE", "2"),
                ("LOCAL_WORLD_SIZE", "2"),
                ("MASTER_ADDR", "127.0.0.1"),
                ("MASTER_PORT", "29500"),
                ("TORCHELASTIC_RUN_ID", run_id),
                ("TORCHELASTIC_RESTART_COUNT", "0"),
            ],
            &["python3", "train.py"],
            Some(1432),
        )
        .unwrap()
    };
    let r = torchrun("3f1c9a", "1");
    assert_eq!(r.launcher, Launcher::Torchrun);
    assert_eq!(r.job.as_deref(), Some("torchrun:3f1c9a"));
    assert_eq!(
        (r.rank, r.world_size, r.local_rank, r.node),
        (Some(1), Some(2), Some(1), Some(0))
    );
    assert_eq!(r.problem, None);
    // `--rdzv-id` not given: "none"; the rendezvous is on loopback, so the host and the agent
    // name the job (a later torchrun on the same port is another job).
    let none = torchrun("none", "0");
    assert_eq!(
        none.job.as_deref(),
        Some("master:gpu-07/127.0.0.1:29500/1432")
    );
}

#[test]
fn a_multi_node_rendezvous_is_named_alike_on_every_host() {
    let on = |host: &str, parent: u32| {
        let v = vars(&[
            ("RANK", "9"),
            ("WORLD_SIZE", "16"),
            ("MASTER_ADDR", "node12"),
            ("MASTER_PORT", "29400"),
            ("TORCHELASTIC_RUN_ID", "none"),
        ]);
        rank(&Launch {
            vars: &v,
            args: &[],
            host,
            parent: Some(parent),
        })
        .unwrap()
        .job
    };
    assert_eq!(on("node12", 10), on("node13", 77));
    assert_eq!(on("node13", 77).as_deref(), Some("master:node12:29400"));
}

#[test]
fn srun_tasks_are_ranks_of_the_step() {
    let task = |procid: &str| {
        rank_of(
            &[
                ("SLURM_JOB_ID", "52222788"),
                ("SLURM_STEP_ID", "0"),
                ("SLURM_PROCID", procid),
                ("SLURM_LOCALID", procid),
                ("SLURM_NODEID", "0"),
                ("SLURM_NTASKS", "4"),
            ],
            &["python3", "train.py"],
            Some(900),
        )
        .unwrap()
    };
    let r = task("3");
    assert_eq!(r.launcher, Launcher::Slurm);
    assert_eq!(r.job.as_deref(), Some("slurm:52222788.0"));
    assert_eq!((r.rank, r.world_size), (Some(3), Some(4)));
    assert_eq!(task("0").job, r.job);
}

#[test]
fn torchrun_inside_srun_is_torchrun_with_its_global_rank() {
    let r = rank_of(
        &[
            ("SLURM_JOB_ID", "7"),
            ("SLURM_PROCID", "1"),
            ("SLURM_NTASKS", "2"),
            ("RANK", "9"),
            ("WORLD_SIZE", "16"),
            ("MASTER_ADDR", "node1"),
            ("MASTER_PORT", "29500"),
            ("TORCHELASTIC_RUN_ID", "7"),
        ],
        &[],
        None,
    )
    .unwrap();
    assert_eq!(r.launcher, Launcher::Torchrun);
    assert_eq!((r.rank, r.world_size), (Some(9), Some(16)));
    assert_eq!(r.job.as_deref(), Some("torchrun:7"));
}

#[test]
fn mpirun_deepspeed_kubeflow_and_jax() {
    let ompi = rank_of(
        &[
            ("OMPI_COMM_WORLD_RANK", "2"),
            ("OMPI_COMM_WORLD_SIZE", "8"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "2"),
            ("OMPI_COMM_WORLD_NODE_RANK", "0"),
            ("PMIX_NAMESPACE", "prterun-gpu-07-1234@1"),
        ],
        &[],
        Some(1234),
    )
    .unwrap();
    assert_eq!(ompi.launcher, Launcher::OpenMpi);
    assert_eq!(ompi.job.as_deref(), Some("mpi:prterun-gpu-07-1234@1"));
    assert_eq!((ompi.rank, ompi.world_size), (Some(2), Some(8)));

    let mpich = rank_of(&[("PMI_RANK", "1"), ("PMI_SIZE", "2")], &[], Some(55)).unwrap();
    assert_eq!(mpich.launcher, Launcher::Mpich);
    assert_eq!(mpich.job.as_deref(), Some("mpi:gpu-07/55"));

    let ds = rank_of(
        &[
            ("RANK", "1"),
            ("WORLD_SIZE", "2"),
            ("MASTER_ADDR", "10.0.0.5"),
            ("MASTER_PORT", "29500"),
            ("CROSS_RANK", "0"),
            ("CROSS_SIZE", "1"),
        ],
        &["python3", "-u", "main.py", "--local_rank=1"],
        None,
    )
    .unwrap();
    assert_eq!(ds.launcher, Launcher::Deepspeed);
    assert_eq!(ds.local_rank, Some(1));
    assert_eq!(ds.job.as_deref(), Some("master:10.0.0.5:29500"));

    let kf = rank_of(
        &[
            ("RANK", "3"),
            ("WORLD_SIZE", "4"),
            ("MASTER_ADDR", "bert-master-0"),
            ("MASTER_PORT", "23456"),
            ("KUBERNETES_SERVICE_HOST", "10.96.0.1"),
        ],
        &[],
        None,
    )
    .unwrap();
    assert_eq!(kf.launcher, Launcher::Kubeflow);
    assert_eq!(kf.job.as_deref(), Some("master:bert-master-0:23456"));

    let jax = rank_of(&[("JAX_COORDINATOR_ADDRESS", "10.0.0.5:1234")], &[], None).unwrap();
    assert_eq!(jax.launcher, Launcher::Jax);
    assert_eq!(jax.job.as_deref(), Some("jax:10.0.0.5:1234"));
    assert_eq!(jax.rank, None, "JAX's process id is not in its environment");
}

#[test]
fn no_launcher_variables_is_no_rank() {
    assert_eq!(rank_of(&[], &["python3", "train.py"], Some(1)), None);
    assert_eq!(rank_of(&[("MASTER_PORT", "29500")], &[], None), None);
    // A Slurm batch script's own process has a job but no task id.
    assert_eq!(rank_of(&[("SLURM_JOB_ID", "7")], &[], None), None);
}

#[test]
fn variables_that_conflict_or_lie_leave_the_rank_unknown_with_the_reason() {
    let r = rank_of(
        &[("RANK", "5"), ("WORLD_SIZE", "4"), ("MASTER_ADDR", "h")],
        &[],
        None,
    )
    .unwrap();
    assert_eq!(r.rank, None);
    assert_eq!(
        r.problem.as_deref(),
        Some("RANK 5 is not below WORLD_SIZE 4")
    );

    let r = rank_of(
        &[("RANK", "one"), ("WORLD_SIZE", "4"), ("MASTER_ADDR", "h")],
        &[],
        None,
    )
    .unwrap();
    assert_eq!(r.rank, None);
    assert_eq!(r.problem.as_deref(), Some("RANK is not a number (\"one\")"));

    let r = rank_of(
        &[("RANK", "0"), ("WORLD_SIZE", "0"), ("MASTER_ADDR", "h")],
        &[],
        None,
    )
    .unwrap();
    assert_eq!(r.world_size, None);
    assert_eq!(r.problem.as_deref(), Some("WORLD_SIZE is 0"));

    let r = rank_of(
        &[
            ("SLURM_JOB_ID", "7"),
            ("SLURM_PROCID", "1"),
            ("SLURM_NTASKS", "2"),
            ("RANK", "0"),
        ],
        &[],
        None,
    )
    .unwrap();
    assert_eq!(r.rank, None);
    assert_eq!(
        r.problem.as_deref(),
        Some("RANK says 0, SLURM_PROCID says 1")
    );

    // A job id with control characters is made printable, and a long one cut.
    let r = rank_of(
        &[
            ("TORCHELASTIC_RUN_ID", "a\x1b[2Jb"),
            ("RANK", "0"),
            ("WORLD_SIZE", "1"),
        ],
        &[],
        None,
    )
    .unwrap();
    assert_eq!(r.job.as_deref(), Some("torchrun:a?[2Jb"));
    let long = "x".repeat(500);
    let r = rank_of(&[("TORCHELASTIC_RUN_ID", &long), ("RANK", "0")], &[], None).unwrap();
    assert_eq!(r.job.unwrap().chars().count(), MAX_JOB_ID);
}

fn inside(rank: u32, world: u32) -> Inside {
    Inside {
        framework: Framework::Pytorch,
        backend: Some("nccl".into()),
        rank: Some(rank),
        world_size: Some(world),
        master: Some("127.0.0.1:29511".into()),
        run_id: None,
    }
}

#[test]
fn the_process_own_word_joins_the_launcher_and_wins_where_they_disagree() {
    let env = rank_of(
        &[
            ("RANK", "1"),
            ("WORLD_SIZE", "2"),
            ("MASTER_ADDR", "127.0.0.1"),
            ("MASTER_PORT", "29511"),
        ],
        &[],
        None,
    );
    let agreed = merge(env.clone(), Some(inside(1, 2)), "gpu-07").unwrap();
    assert_eq!(agreed.problem, None);
    assert_eq!(agreed.nccl(), Some(true));
    assert_eq!(agreed.job.as_deref(), Some("master:gpu-07/127.0.0.1:29511"));

    let odd = merge(env, Some(inside(0, 2)), "gpu-07").unwrap();
    assert_eq!(odd.rank, Some(0));
    assert_eq!(
        odd.problem.as_deref(),
        Some("its launcher says rank 1, torch.distributed says 0")
    );

    // mp.spawn: no launcher variables in /proc, the probe names the rank and the rendezvous.
    let spawned = merge(None, Some(inside(3, 4)), "gpu-07").unwrap();
    assert_eq!(spawned.launcher, Launcher::Probe);
    assert_eq!((spawned.rank, spawned.world_size), (Some(3), Some(4)));
    assert_eq!(
        spawned.job.as_deref(),
        Some("master:gpu-07/127.0.0.1:29511")
    );
    assert_eq!(merge(None, None, "gpu-07"), None);
}
