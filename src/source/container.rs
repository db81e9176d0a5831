//! Which container, Kubernetes pod, Slurm job or systemd service a process runs in, from
//! `/proc/PID/cgroup`, and its PID inside its own PID namespace, from `NSpid:` in `/proc/PID/status`.
//!
//! Parsing is by hand in small pure functions over the files' text (the `procfs` crate's parsers
//! reject a whole `status` file for one missing unrelated field and classify no cgroup paths).
//! Only path shapes the runtimes are documented to use are recognised; anything else is "none".

use std::io::ErrorKind;
use std::path::Path;

use super::Reading;

/// Longest short form, in characters; longer ones end in `…`.
pub const SHORT_MAX: usize = 24;

/// The container runtime whose cgroup a process is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    Docker,
    Podman,
    Containerd,
    Crio,
}

/// Kubernetes pod quality-of-service class, read from the kubepods cgroup tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Qos {
    Guaranteed,
    Burstable,
    BestEffort,
}

/// A Slurm job step (`step_<name>` in the cgroup path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlurmStep {
    Batch,
    Extern,
    Interactive,
    Number(u32),
}

/// What a process's cgroup says it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Container {
    /// A container outside Kubernetes; `id` is the runtime's 64-hex container id.
    Plain { runtime: Runtime, id: String },
    /// A Kubernetes pod; `pod_uid` has dashes. `runtime` is unknown under the kubelet's cgroupfs
    /// driver (the leaf is a bare id); `container_id` is absent for a process in the pod's own cgroup.
    Pod {
        pod_uid: String,
        qos: Qos,
        runtime: Option<Runtime>,
        container_id: Option<String>,
    },
    /// A Slurm job, and its step when the process is inside one.
    Slurm { job: u32, step: Option<SlurmStep> },
    /// A system service, `name` with its `.service` suffix.
    Service { name: String },
}

/// The container of a process and its PID as seen inside its PID namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerInfo {
    /// `None`: a plain user session, the root cgroup, or a path of no known shape.
    pub container: Option<Container>,
    /// `None`: the process is in the same PID namespace as gpumon (or the kernel predates `NSpid`).
    pub namespace_pid: Option<u32>,
}

impl Runtime {
    fn name(self) -> &'static str {
        match self {
            Runtime::Docker => "docker",
            Runtime::Podman => "podman",
            Runtime::Containerd => "containerd",
            Runtime::Crio => "crio",
        }
    }
}

impl Qos {
    fn name(self) -> &'static str {
        match self {
            Qos::Guaranteed => "guaranteed",
            Qos::Burstable => "burstable",
            Qos::BestEffort => "besteffort",
        }
    }
}

impl std::fmt::Display for SlurmStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SlurmStep::Batch => f.write_str("batch"),
            SlurmStep::Extern => f.write_str("extern"),
            SlurmStep::Interactive => f.write_str("interactive"),
            SlurmStep::Number(n) => write!(f, "{n}"),
        }
    }
}

impl Container {
    /// The form for table cells and metric labels, at most [`SHORT_MAX`] characters:
    /// `k8s:3f2a1b4c/9c1e5d2a7b3`, `docker:9c1e5d2a7b3f`, `slurm:48211.0`, `systemd:x.service`.
    pub fn short(&self) -> String {
        let s = match self {
            Container::Plain { runtime, id } => format!("{}:{}", runtime.name(), prefix(id, 12)),
            Container::Pod {
                pod_uid,
                container_id,
                ..
            } => match container_id {
                Some(id) => format!("k8s:{}/{}", prefix(pod_uid, 8), prefix(id, 11)),
                None => format!("k8s:{}", prefix(pod_uid, 8)),
            },
            Container::Slurm { job, step: Some(s) } => format!("slurm:{job}.{s}"),
            Container::Slurm { job, step: None } => format!("slurm:{job}"),
            Container::Service { name } => format!("systemd:{name}"),
        };
        if s.chars().count() <= SHORT_MAX {
            return s;
        }
        let mut cut: String = s.chars().take(SHORT_MAX - 1).collect();
        cut.push('…');
        cut
    }

    /// The form for snapshots and the detail pane, with full ids.
    pub fn full(&self) -> String {
        match self {
            Container::Plain { runtime, id } => format!("{} container {id}", runtime.name()),
            Container::Pod {
                pod_uid,
                qos,
                runtime,
                container_id,
            } => {
                let mut s = format!("kubernetes pod {pod_uid} ({} QoS)", qos.name());
                if let Some(id) = container_id {
                    let rt = runtime
                        .map(|r| format!("{} ", r.name()))
                        .unwrap_or_default();
                    s.push_str(&format!(", {rt}container {id}"));
                }
                s
            }
            Container::Slurm { job, step: Some(s) } => format!("slurm job {job} step {s}"),
            Container::Slurm { job, step: None } => format!("slurm job {job}"),
            Container::Service { name } => format!("systemd service {name}"),
        }
    }

    /// How specific a finding is, to choose among cgroup v1 hierarchies that disagree.
    fn rank(&self) -> u8 {
        match self {
            Container::Plain { .. } | Container::Pod { .. } => 3,
            Container::Slurm { .. } => 2,
            Container::Service { .. } => 1,
        }
    }
}

fn prefix(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(i, _)| &s[..i])
}

/// The v1 controllers whose hierarchy says where a process runs, most telling first; `""` is v2.
const CONTROLLERS: &[&str] = &["memory", "cpu", "cpuacct", "pids", "name=systemd", ""];

/// Classifies the text of `/proc/PID/cgroup`; lines not of the form `N:controllers:/path` are
/// skipped. Among the usable lines, the most specific finding wins (container over Slurm job
/// over service), ties going to the earlier controller in [`CONTROLLERS`].
pub fn from_cgroup(text: &str) -> Option<Container> {
    text.lines()
        .filter_map(cgroup_line)
        .min_by_key(|(order, found)| (std::cmp::Reverse(found.rank()), *order))
        .map(|(_, found)| found)
}

/// One line's finding, with its controller's place in [`CONTROLLERS`].
fn cgroup_line(line: &str) -> Option<(usize, Container)> {
    let mut parts = line.splitn(3, ':');
    let (hierarchy, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
    number(hierarchy)?;
    let order = controllers
        .split(',')
        .filter_map(|c| CONTROLLERS.iter().position(|k| *k == c))
        .min()?;
    Some((order, from_path(path)?))
}

/// Classifies one cgroup path.
pub fn from_path(path: &str) -> Option<Container> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    container(&parts)
        .or_else(|| slurm(&parts))
        .or_else(|| service(&parts))
}

/// The innermost container in the path, inside a Kubernetes pod or not.
fn container(parts: &[&str]) -> Option<Container> {
    let found = parts.iter().enumerate().rev().find_map(|(i, p)| {
        let (rt, id) = leaf(p)?;
        // A bare id is a container only under `/docker/` or directly under a pod.
        match rt {
            Some(_) => Some((i, rt, id)),
            None if i > 0 && parts[i - 1] == "docker" => Some((i, Some(Runtime::Docker), id)),
            None if i > 0 && pod(&parts[..i]).is_some() => Some((i, None, id)),
            None => None,
        }
    });
    let Some((i, runtime, id)) = found else {
        return pod_only(parts);
    };
    if let Some((pod_uid, qos)) = pod(&parts[..i]) {
        return Some(Container::Pod {
            pod_uid,
            qos,
            runtime,
            container_id: Some(id.to_string()),
        });
    }
    Some(Container::Plain {
        runtime: runtime?,
        id: id.to_string(),
    })
}

/// A container cgroup leaf: `<runtime>-<64 hex>.scope`, `crio-<64 hex>` or a bare 64-hex id.
fn leaf(part: &str) -> Option<(Option<Runtime>, &str)> {
    let name = part.strip_suffix(".scope").unwrap_or(part);
    let known = [
        ("docker-", Runtime::Docker),
        ("libpod-", Runtime::Podman),
        ("cri-containerd-", Runtime::Containerd),
        ("crio-", Runtime::Crio),
    ];
    let (rt, id) = known
        .iter()
        .find_map(|(p, rt)| name.strip_prefix(p).map(|id| (Some(*rt), id)))
        .unwrap_or((None, name));
    is_id(id).then_some((rt, id))
}

fn is_id(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A pod cgroup that is the last part of `parts`, with the pod's UID (dashed) and QoS class.
fn pod(parts: &[&str]) -> Option<(String, Qos)> {
    let (last, above) = parts.split_last()?;
    let root = above
        .iter()
        .position(|p| *p == "kubepods" || *p == "kubepods.slice")?;
    let (uid, qos) = if parts[root] == "kubepods" {
        let qos = match &above[root + 1..] {
            [] => Qos::Guaranteed,
            ["burstable"] => Qos::Burstable,
            ["besteffort"] => Qos::BestEffort,
            _ => return None,
        };
        (last.strip_prefix("pod")?.to_string(), qos)
    } else {
        let name = last.strip_suffix(".slice")?;
        let (qos, rest) = match &above[root + 1..] {
            [] => (Qos::Guaranteed, name.strip_prefix("kubepods-pod")?),
            ["kubepods-burstable.slice"] => {
                (Qos::Burstable, name.strip_prefix("kubepods-burstable-pod")?)
            }
            ["kubepods-besteffort.slice"] => (
                Qos::BestEffort,
                name.strip_prefix("kubepods-besteffort-pod")?,
            ),
            _ => return None,
        };
        (rest.replace('_', "-"), qos)
    };
    is_uid(&uid).then_some((uid, qos))
}

/// A process in a pod's own cgroup, not in one of its containers.
fn pod_only(parts: &[&str]) -> Option<Container> {
    let (pod_uid, qos) = pod(parts)?;
    Some(Container::Pod {
        pod_uid,
        qos,
        runtime: None,
        container_id: None,
    })
}

fn is_uid(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// `…/slurm[_node]/uid_U/job_J/step_S/…` (v1) or `…/slurmstepd.scope/job_J/step_S/…` (v2).
fn slurm(parts: &[&str]) -> Option<Container> {
    let base = parts
        .iter()
        .position(|p| *p == "slurm" || p.starts_with("slurm_") || *p == "slurmstepd.scope")?;
    let rest = &parts[base + 1..];
    let j = rest.iter().position(|p| p.starts_with("job_"))?;
    let job = number(&rest[j]["job_".len()..])?;
    let step = rest
        .get(j + 1)
        .and_then(|p| p.strip_prefix("step_"))
        .and_then(|s| match s {
            "batch" => Some(SlurmStep::Batch),
            "extern" => Some(SlurmStep::Extern),
            "interactive" => Some(SlurmStep::Interactive),
            n => number(n).map(SlurmStep::Number),
        });
    Some(Container::Slurm { job, step })
}

/// A decimal number of digits only (no sign), as the kernel and Slurm write them.
fn number(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `/system.slice/<name>.service`; services of a user's own systemd are the user's session.
fn service(parts: &[&str]) -> Option<Container> {
    let [first, name, ..] = parts else {
        return None;
    };
    let stem = name.strip_suffix(".service")?;
    let valid = |b: u8| b.is_ascii_alphanumeric() || b":_.\\-@".contains(&b);
    (*first == "system.slice" && !stem.is_empty() && name.len() <= 255 && name.bytes().all(valid))
        .then(|| Container::Service {
            name: name.to_string(),
        })
}

/// The PID as seen in the innermost PID namespace, from the text of `/proc/PID/status`;
/// `None` when the process is not in a nested namespace or the line is missing or malformed.
pub fn namespace_pid(status: &str) -> Option<u32> {
    let line = status.lines().find_map(|l| l.strip_prefix("NSpid:"))?;
    let pids: Vec<u32> = line.split_whitespace().map(number).collect::<Option<_>>()?;
    match pids.as_slice() {
        [_, .., inner] => Some(*inner),
        _ => None,
    }
}

/// Reads `<proc_root>/<pid>/cgroup` and `status` (`proc_root` is `/proc` outside tests).
pub fn read(proc_root: &Path, pid: u32) -> Reading<ContainerInfo> {
    let dir = proc_root.join(pid.to_string());
    let text = |file: &str| match std::fs::read(dir.join(file)) {
        Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) => Err(match e.kind() {
            ErrorKind::NotFound => "process has exited".to_string(),
            ErrorKind::PermissionDenied => format!("{file} not readable (permission denied)"),
            _ => format!("{file} not readable: {e}"),
        }),
    };
    match (text("cgroup"), text("status")) {
        (Ok(cgroup), Ok(status)) => Reading::Value(ContainerInfo {
            container: from_cgroup(&cgroup),
            namespace_pid: namespace_pid(&status),
        }),
        (Err(reason), _) | (_, Err(reason)) => Reading::na(format!("container unknown: {reason}")),
    }
}

#[cfg(test)]
mod tests;

impl From<ContainerInfo> for crate::sample::Placement {
    fn from(info: ContainerInfo) -> Self {
        crate::sample::Placement {
            short: info
                .container
                .as_ref()
                .map(Container::short)
                .unwrap_or_default(),
            full: info
                .container
                .as_ref()
                .map(Container::full)
                .unwrap_or_default(),
            namespace_pid: info.namespace_pid,
        }
    }
}
