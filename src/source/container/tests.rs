//! Tests of cgroup and NSpid parsing on real-format fixtures, on garbage, and on a fixture /proc tree.

use proptest::prelude::*;

use super::*;

const D: &str = "9c1e5d2a7b3f4e6a8b0c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f708";
const K: &str = "4b6f2c8e1a3d5f7091b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718";
const UID: &str = "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b";

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!("../../../tests/fixtures/cgroup/", $name))
    };
}

fn plain(runtime: Runtime, id: &str) -> Option<Container> {
    Some(Container::Plain {
        runtime,
        id: id.to_string(),
    })
}

fn pod(qos: Qos, runtime: Option<Runtime>) -> Option<Container> {
    Some(Container::Pod {
        pod_uid: UID.to_string(),
        qos,
        runtime,
        container_id: Some(K.to_string()),
    })
}

fn short(text: &str) -> String {
    from_cgroup(text).map(|c| c.short()).unwrap_or_default()
}

#[test]
fn docker_both_drivers() {
    let v1 = fixture!("docker-v1-cgroupfs.txt");
    assert_eq!(from_cgroup(v1), plain(Runtime::Docker, D));
    assert_eq!(
        from_cgroup(fixture!("docker-v2-systemd.txt")),
        plain(Runtime::Docker, D)
    );
    assert_eq!(short(v1), "docker:9c1e5d2a7b3f");
    let full = from_cgroup(v1).unwrap().full();
    assert_eq!(full, format!("docker container {D}"));
}

#[test]
fn kubernetes_systemd_and_cgroupfs_drivers_and_qos_classes() {
    let cases = [
        (
            fixture!("k8s-v2-systemd-burstable-containerd.txt"),
            pod(Qos::Burstable, Some(Runtime::Containerd)),
        ),
        (
            fixture!("k8s-v1-systemd-guaranteed-crio.txt"),
            pod(Qos::Guaranteed, Some(Runtime::Crio)),
        ),
        (
            fixture!("k8s-v1-cgroupfs-besteffort.txt"),
            pod(Qos::BestEffort, None),
        ),
        (
            fixture!("k8s-v2-cgroupfs-guaranteed.txt"),
            pod(Qos::Guaranteed, None),
        ),
    ];
    for (text, want) in cases {
        assert_eq!(from_cgroup(text), want, "{text}");
        assert_eq!(short(text), "k8s:3f2a1b4c/4b6f2c8e1a3");
    }
    let besteffort_systemd = format!(
        "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{}.slice/docker-{K}.scope",
        UID.replace('-', "_")
    );
    assert_eq!(
        from_cgroup(&besteffort_systemd),
        pod(Qos::BestEffort, Some(Runtime::Docker))
    );
    let full = from_cgroup(fixture!("k8s-v2-systemd-burstable-containerd.txt"))
        .unwrap()
        .full();
    assert_eq!(
        full,
        format!("kubernetes pod {UID} (burstable QoS), containerd container {K}")
    );
}

#[test]
fn a_process_in_the_pod_cgroup_itself_has_no_container() {
    let text = format!("0::/kubepods/burstable/pod{UID}");
    let c = from_cgroup(&text).unwrap();
    let want = Container::Pod {
        pod_uid: UID.to_string(),
        qos: Qos::Burstable,
        runtime: None,
        container_id: None,
    };
    assert_eq!(c, want);
    assert_eq!(c.short(), "k8s:3f2a1b4c");
    assert_eq!(c.full(), format!("kubernetes pod {UID} (burstable QoS)"));
}

#[test]
fn podman_and_cri_runtimes_outside_kubernetes() {
    let podman = fixture!("podman-v2-rootless.txt");
    assert_eq!(from_cgroup(podman), plain(Runtime::Podman, D));
    assert_eq!(short(podman), "podman:9c1e5d2a7b3f");
    let crio = fixture!("crio-v2-plain.txt");
    assert_eq!(from_cgroup(crio), plain(Runtime::Crio, D));
    assert_eq!(short(crio), "crio:9c1e5d2a7b3f");
    let containerd = format!("0::/system.slice/cri-containerd-{D}.scope");
    assert_eq!(short(&containerd), "containerd:9c1e5d2a7b3f");
}

#[test]
fn slurm_v1_memory_hierarchy_beats_the_systemd_service_lines() {
    let text = fixture!("slurm-v1.txt");
    let want = Container::Slurm {
        job: 48211,
        step: Some(SlurmStep::Number(0)),
    };
    assert_eq!(from_cgroup(text), Some(want.clone()));
    assert_eq!(want.short(), "slurm:48211.0");
    assert_eq!(want.full(), "slurm job 48211 step 0");
}

#[test]
fn slurm_v2_steps() {
    assert_eq!(short(fixture!("slurm-v2-batch.txt")), "slurm:48211.batch");
    let base = "0::/system.slice/slurmstepd.scope/job_48211";
    for (step, want) in [
        ("/step_extern/slurm", "slurm:48211.extern"),
        ("/step_interactive/user/task_0", "slurm:48211.interactive"),
        ("/step_3/user/task_1", "slurm:48211.3"),
        ("", "slurm:48211"),
        ("/step_bogus/user/task_0", "slurm:48211"),
    ] {
        assert_eq!(short(&format!("{base}{step}")), want);
    }
    let long = "0::/system.slice/slurmstepd.scope/job_67043328/step_interactive/user/task_0";
    assert_eq!(short(long), "slurm:67043328.interact…");
    // Without a Slurm ancestor, a `job_` directory is nobody's job.
    assert_eq!(from_cgroup("0::/user.slice/job_5/step_0"), None);
}

#[test]
fn system_services_but_not_user_sessions_or_the_root() {
    let text = fixture!("service-v2.txt");
    let want = Container::Service {
        name: "ollama.service".to_string(),
    };
    assert_eq!(from_cgroup(text), Some(want.clone()));
    assert_eq!(want.short(), "systemd:ollama.service");
    assert_eq!(want.full(), "systemd service ollama.service");
    assert_eq!(from_cgroup(fixture!("user-session-v2.txt")), None);
    assert_eq!(from_cgroup(fixture!("root-v2.txt")), None);
    let user_manager = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app.service";
    assert_eq!(from_cgroup(user_manager), None);
    let long = "0::/system.slice/nvidia-persistenced.service";
    assert_eq!(short(long), "systemd:nvidia-persiste…");
}

#[test]
fn among_agreeing_ranks_the_memory_hierarchy_wins() {
    let other = D.replace('9', "0");
    let text = format!("1:name=systemd:/docker/{other}\n5:memory:/docker/{D}\n0::/\n");
    assert_eq!(from_cgroup(&text), plain(Runtime::Docker, D));
    // Hierarchies other than the listed controllers are not consulted.
    assert_eq!(from_cgroup(&format!("6:freezer:/docker/{D}")), None);
}

#[test]
fn malformed_ids_and_lines_are_not_containers() {
    let bad = [
        String::new(),
        "\n\n\n".to_string(),
        format!("0::/docker/{}", &D[..63]),
        format!("0::/docker/{}", D.to_uppercase()),
        format!("0::/docker/{}g", &D[..63]),
        format!("0::/system.slice/docker-{D}0.scope"),
        format!("0::/system.slice/docker-{D}.scope.scope"),
        format!("0::/{D}"),
        format!("0/docker/{D}"),
        format!("x::/docker/{D}"),
        format!(":0:/docker/{D}"),
        format!("0::/kubepods/burstable/pod{}/x", &UID[..35]),
        "0::/kubepods/burstable/podnot-a-uid".to_string(),
        format!("0::/kubepods/weird/pod{UID}/{K}"),
        "0::/system.slice/.service".to_string(),
        "0::/system.slice/bad name.service".to_string(),
        "0::/system.slice/slurmstepd.scope/job_+5/step_0".to_string(),
        "0::/system.slice/slurmstepd.scope/job_99999999999/step_0".to_string(),
    ];
    for text in &bad {
        assert_eq!(from_cgroup(text), None, "{text:?}");
    }
}

#[test]
fn binary_and_very_long_input_is_not_a_panic() {
    let bytes: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
    assert_eq!(from_cgroup(&String::from_utf8_lossy(&bytes)), None);
    let long = format!("0::/{}", "a/".repeat(500_000));
    assert_eq!(from_cgroup(&long), None);
    let long_name = format!("0::/system.slice/{}.service", "a".repeat(300));
    assert_eq!(from_cgroup(&long_name), None);
    assert_eq!(
        namespace_pid(&format!("NSpid:{}", " 1".repeat(100_000))),
        Some(1)
    );
}

#[test]
fn nspid_gives_the_innermost_pid_only_when_nested() {
    assert_eq!(namespace_pid(fixture!("status-nested.txt")), Some(7));
    assert_eq!(namespace_pid(fixture!("status-host.txt")), None);
    assert_eq!(namespace_pid("Name:\tpython3\nPid:\t5\n"), None);
    assert_eq!(namespace_pid("NSpid:\t5\t4\t3\n"), Some(3));
    for bad in [
        "NSpid:",
        "NSpid:\t5\tx",
        "NSpid:\t-5\t1",
        "NSpid:\t5\t99999999999",
        "",
    ] {
        assert_eq!(namespace_pid(bad), None, "{bad:?}");
    }
}

/// A /proc tree in a temporary directory with one process, 4242.
fn proc_tree(cgroup: &str, status: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("4242");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("cgroup"), cgroup).unwrap();
    std::fs::write(dir.join("status"), status).unwrap();
    root
}

#[test]
fn reads_a_fixture_proc_tree() {
    let root = proc_tree(
        fixture!("k8s-v2-systemd-burstable-containerd.txt"),
        fixture!("status-nested.txt"),
    );
    let want = ContainerInfo {
        container: pod(Qos::Burstable, Some(Runtime::Containerd)),
        namespace_pid: Some(7),
    };
    assert_eq!(read(root.path(), 4242), Reading::Value(want));
}

#[test]
fn a_missing_or_unreadable_process_is_unavailable_with_the_reason() {
    let root = proc_tree("0::/\n", fixture!("status-host.txt"));
    assert_eq!(
        read(root.path(), 4243),
        Reading::na("container unknown: process has exited")
    );
    std::fs::remove_file(root.path().join("4242/status")).unwrap();
    assert_eq!(
        read(root.path(), 4242),
        Reading::na("container unknown: process has exited")
    );
    let cgroup = root.path().join("4242/cgroup");
    std::fs::remove_file(&cgroup).unwrap();
    std::fs::create_dir(&cgroup).unwrap();
    let got = read(root.path(), 4242);
    let reason = got.reason().unwrap();
    assert!(
        reason.starts_with("container unknown: cgroup not readable: "),
        "{reason}"
    );
}

#[test]
fn reads_this_process_from_the_real_proc() {
    assert!(
        read(Path::new("/proc"), std::process::id())
            .value()
            .is_some()
    );
}

/// Path parts that make up the shapes recognised, mixed with near misses.
fn part() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "docker",
            "kubepods",
            "kubepods.slice",
            "burstable",
            "besteffort",
            "kubepods-burstable.slice",
            "slurm",
            "slurmstepd.scope",
            "uid_0",
            "job_1",
            "step_batch",
            "step_7",
            "system.slice",
            "user.slice",
            "x.service",
        ])
        .prop_map(str::to_string),
        Just(format!("pod{UID}")),
        Just(format!(
            "kubepods-burstable-pod{}.slice",
            UID.replace('-', "_")
        )),
        Just(D.to_string()),
        Just(format!("libpod-{K}.scope")),
        Just(format!("crio-{K}")),
        "[a-z0-9_.@-]{0,70}",
    ]
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        if let Some(c) = from_cgroup(&text) {
            prop_assert!(c.short().chars().count() <= SHORT_MAX);
        }
        let _ = namespace_pid(&text);
    }

    #[test]
    fn paths_of_known_parts_give_short_forms_that_fit(
        parts in prop::collection::vec(part(), 0..8),
        v1 in any::<bool>(),
    ) {
        let head = if v1 { "4:memory:" } else { "0::" };
        let text = format!("{head}/{}", parts.join("/"));
        if let Some(c) = from_cgroup(&text) {
            prop_assert!(c.short().chars().count() <= SHORT_MAX, "{}", c.short());
            prop_assert!(!c.full().is_empty());
        }
    }
}
