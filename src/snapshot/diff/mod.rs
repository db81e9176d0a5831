//! `gpumon diff`: what differs between two snapshots (two machines, or two moments) in ways that
//! matter for GPU memory, each difference with both values and one sentence on its effect.

mod explain;
mod failures;
mod health;
mod processes;
mod render;
mod settings;

use serde::Serialize;

use super::lines::size;
use super::{Gpu, Process, Snapshot};
use crate::sample::Framework;
pub use render::{render_json, render_text};

/// The differences between snapshot A and snapshot B.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diff {
    pub a: Side,
    pub b: Side,
    pub differences: Vec<Difference>,
    /// What the comparison could not see.
    pub notes: Vec<String>,
}

/// Which snapshot a side is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Side {
    pub host: Option<String>,
    pub taken_at: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Topic {
    DriverVersion,
    CudaVersion,
    GpuCount,
    GpuModel,
    TotalMemory,
    ReservedMemory,
    /// A process (by framework and command line) runs on one side only.
    ProcessOnOneSide,
    /// A process runs on one side and had exited on the other.
    ProcessExited,
    /// A failure (OOM or memory fault) one side's alerts hold and the other's do not.
    Failure,
    DeviceMemory,
    /// Device memory outside the framework's own pool (CUDA context, workspaces).
    Overhead,
    /// The allocator probe's figures of the same job (allocated, pool, stranded).
    Pool,
    Setting,
    /// ECC mode, remapped rows.
    MemoryHealth,
}

/// One difference: both values as text (and in bytes where they are sizes), and its effect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    pub topic: Topic,
    /// What differs, e.g. "GPU 0 reserved memory" or "jax `python train.py`: XLA_...".
    pub subject: String,
    /// A's value as text.
    pub a: String,
    /// B's value as text; for sizes with the change from A, e.g. "615M (+86M)".
    pub b: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b_bytes: Option<u64>,
    /// One sentence on what the difference does to memory.
    pub effect: String,
}

impl Difference {
    fn text(
        topic: Topic,
        subject: impl Into<String>,
        a: String,
        b: String,
        effect: String,
    ) -> Self {
        Difference {
            topic,
            subject: subject.into(),
            a,
            b,
            a_bytes: None,
            b_bytes: None,
            effect,
        }
    }

    fn bytes(
        topic: Topic,
        subject: impl Into<String>,
        a: Option<u64>,
        b: Option<u64>,
        effect: String,
    ) -> Self {
        let b_text = match (a, b) {
            (Some(x), Some(y)) => {
                let sign = if y >= x { '+' } else { '-' };
                format!("{} ({sign}{})", size(b), size(Some(x.abs_diff(y))))
            }
            _ => size(b),
        };
        Difference {
            a_bytes: a,
            b_bytes: b,
            ..Difference::text(topic, subject, size(a), b_text, effect)
        }
    }
}

const SETTINGS_NOTE: &str = "Settings are read from each process's initial environment \
(/proc/PID/environ); changes a program makes to its own environment after it starts are not seen.";

/// Compares snapshot `a` with snapshot `b`.
pub fn diff(a: &Snapshot, b: &Snapshot) -> Diff {
    let mut out = Vec::new();
    versions(a, b, &mut out);
    gpus(a, b, &mut out);
    processes::compare(a, b, &mut out);
    failures::compare(a, b, &mut out);
    let notes = notes(a, b);
    Diff {
        a: side(a),
        b: side(b),
        differences: out,
        notes,
    }
}

fn side(s: &Snapshot) -> Side {
    Side {
        host: s.machine.host.clone(),
        taken_at: s.taken_at.clone(),
    }
}

fn shown(v: Option<&str>) -> String {
    v.unwrap_or("n/a").to_string()
}

fn versions(a: &Snapshot, b: &Snapshot, out: &mut Vec<Difference>) {
    let (ma, mb) = (&a.machine, &b.machine);
    if ma.driver_version != mb.driver_version {
        out.push(Difference::text(
            Topic::DriverVersion,
            "driver version",
            shown(ma.driver_version.as_deref()),
            shown(mb.driver_version.as_deref()),
            "The driver decides how much memory it reserves and how large each process's CUDA \
             context is, so the same job can hold tens to hundreds of MiB more or less."
                .into(),
        ));
    }
    if ma.cuda_version != mb.cuda_version {
        out.push(Difference::text(
            Topic::CudaVersion,
            "CUDA driver version",
            shown(ma.cuda_version.as_deref()),
            shown(mb.cuda_version.as_deref()),
            "The CUDA version sets the context size and whether kernels load lazily (the default \
             from CUDA 12.2), which changes each process's device memory by up to hundreds of MiB."
                .into(),
        ));
    }
}

fn gpus(a: &Snapshot, b: &Snapshot, out: &mut Vec<Difference>) {
    if a.gpus.len() != b.gpus.len() {
        out.push(Difference::text(
            Topic::GpuCount,
            "GPUs",
            a.gpus.len().to_string(),
            b.gpus.len().to_string(),
            "The machines have different numbers of GPUs; processes are matched by command line \
             whatever GPU they run on."
                .into(),
        ));
    }
    for ga in &a.gpus {
        let Some(gb) = b.gpus.iter().find(|g| g.index == ga.index) else {
            continue;
        };
        gpu_pair(ga, gb, out);
    }
}

fn gpu_pair(ga: &Gpu, gb: &Gpu, out: &mut Vec<Difference>) {
    let gpu = format!("GPU {}", ga.index);
    if ga.name != gb.name {
        out.push(Difference::text(
            Topic::GpuModel,
            format!("{gpu} model"),
            ga.name.clone(),
            gb.name.clone(),
            "Different GPU models differ in total memory and SM count, and the CUDA context \
             grows with the SM count (a bare context is ~300-600 MiB)."
                .into(),
        ));
    }
    let (ma, mb) = (ga.memory.as_ref(), gb.memory.as_ref());
    let total = |m: Option<&super::GpuMemory>| m.map(|m| m.total);
    if total(ma) != total(mb) {
        out.push(Difference::bytes(
            Topic::TotalMemory,
            format!("{gpu} total memory"),
            total(ma),
            total(mb),
            "Pools sized as a fraction of the total (JAX 75% by default, TensorFlow nearly all) \
             scale with it, so such processes show different device memory for the same work."
                .into(),
        ));
    }
    let reserved = |m: Option<&super::GpuMemory>| m.and_then(|m| m.reserved);
    let (ra, rb) = (reserved(ma), reserved(mb));
    if ra != rb {
        out.push(Difference::bytes(
            Topic::ReservedMemory,
            format!("{gpu} reserved memory"),
            ra,
            rb,
            explain::reserved(ga, gb, ra, rb),
        ));
    }
    health::pair(&gpu, ga.health.as_ref(), gb.health.as_ref(), out);
}

/// What the comparison could not see.
fn notes(a: &Snapshot, b: &Snapshot) -> Vec<String> {
    let mut notes = Vec::new();
    let unreadable = a
        .processes
        .iter()
        .chain(&b.processes)
        .any(|p| p.settings.is_none());
    notes.push(SETTINGS_NOTE.to_string());
    if unreadable {
        notes.push(
            "Some processes' environments could not be read (another user's process, or another \
             PID namespace): their settings are unknown, not unset."
                .to_string(),
        );
    }
    notes
}

/// A process as the diff names it: framework and command line.
pub(super) fn label(p: &Process) -> String {
    let fw = p.framework.map_or("n/a", Framework::label);
    match &p.command {
        Some(c) => format!("{fw} `{c}`"),
        None => format!("{fw} pid {} (command n/a)", p.pid),
    }
}
