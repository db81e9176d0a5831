//! Which process on A is which on B: matched by framework, command line and order (the first
//! `python train.py` started on A with the first on B, the second with the second), and what a
//! process without a partner is: one more of the same command on one side, one that exited there
//! (after an OOM, if one was raised), or one the other side never ran.

use super::{Difference, Topic, explain, failures, label};
use crate::snapshot::lines::size;
use crate::snapshot::{Process, Snapshot};

/// Where a process ran: "pid 4312 on GPU 0".
fn place(s: &Snapshot, p: &Process) -> String {
    let gpu = s
        .gpu(&p.gpu_uuid)
        .map_or_else(|| p.gpu_uuid.clone(), |g| g.index.to_string());
    format!("pid {} on GPU {gpu}", p.pid)
}

/// The processes of a snapshot that still run (`exited`: false) or have exited, in the order
/// they started (then GPU and PID), the order same-command processes are matched in.
fn listed(s: &Snapshot, exited: bool) -> Vec<&Process> {
    let mut v: Vec<&Process> = s
        .processes
        .iter()
        .filter(|p| p.exited_at.is_some() == exited)
        .collect();
    v.sort_by_key(|p| {
        let gpu = s.gpu(&p.gpu_uuid).map(|g| g.index);
        (p.started_at.clone(), gpu, p.pid)
    });
    v
}

/// Whether two processes run the same thing: framework and a known command line.
fn same(x: &Process, y: &Process) -> bool {
    x.command.is_some() && x.command == y.command && x.framework == y.framework
}

/// Matches the running processes of both sides and compares each pair; a process without a
/// partner is said to be on one side, with why.
pub(super) fn compare(a: &Snapshot, b: &Snapshot, out: &mut Vec<Difference>) {
    let (run_a, run_b) = (listed(a, false), listed(b, false));
    let mut partner: Vec<Option<&Process>> = vec![None; run_a.len()];
    let mut taken = vec![false; run_b.len()];
    for (i, pa) in run_a.iter().enumerate() {
        // The first of B's not yet matched with the same command: the n-th with the n-th.
        if let Some(j) = (0..run_b.len()).find(|&j| !taken[j] && same(pa, run_b[j])) {
            taken[j] = true;
            partner[i] = Some(run_b[j]);
        }
    }
    for (pa, pb) in run_a.iter().zip(&partner) {
        match pb {
            Some(pb) => explain::pair(a, pa, b, pb, out),
            None => out.push(alone(Side::A, pa, a, b, &run_a, &run_b)),
        }
    }
    for (pb, _) in run_b.iter().zip(&taken).filter(|(_, t)| !**t) {
        out.push(alone(Side::B, pb, b, a, &run_b, &run_a));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    A,
    B,
}

impl Side {
    fn other(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Side::A => "A",
            Side::B => "B",
        }
    }
}

/// A process running on `side` (snapshot `here`) with no partner on the other (`there`).
fn alone(
    side: Side,
    p: &Process,
    here: &Snapshot,
    there: &Snapshot,
    running_here: &[&Process],
    running_there: &[&Process],
) -> Difference {
    let shown = format!("{}, {}", place(here, p), size(p.device_memory));
    let (other, who) = (side.other().name(), side.name());
    // The same process (same PID and command) exited on the other side, else one of its command.
    let exited = listed(there, true);
    let gone = exited
        .iter()
        .find(|q| q.pid == p.pid && same(p, q))
        .or_else(|| exited.iter().find(|q| same(p, q)));
    let (there_text, topic, effect) = if let Some(q) = gone {
        let when = q.exited_at.as_deref().map_or("n/a", failures::clock);
        let oom = failures::of_process(there, q.pid)
            .map(|f| {
                format!(
                    ", after its OOM at {} ({})",
                    failures::clock(&f.at),
                    f.class
                )
            })
            .unwrap_or_default();
        (
            format!("{}, exited at {when}{oom}", place(there, q)),
            Topic::ProcessExited,
            format!(
                "It had exited on {other}'s side{oom}, so it holds no device memory there: its \
                 memory was given back, and counts on {who} only."
            ),
        )
    } else {
        let (n_here, n_there) = (
            running_here.iter().filter(|q| same(p, q)).count(),
            running_there.iter().filter(|q| same(p, q)).count(),
        );
        let effect = if n_there > 0 {
            format!(
                "{who} runs {n_here} processes with this framework and command line, {other} \
                 runs {n_there}; they are matched in the order they started, and this one has no \
                 partner, so its device memory counts on {who} only."
            )
        } else {
            "No process with this framework and command line runs on the other side, so its \
             device memory counts on one side only."
                .to_string()
        };
        ("absent".to_string(), Topic::ProcessOnOneSide, effect)
    };
    let (a, b, a_bytes, b_bytes) = match side {
        Side::A => (shown, there_text, p.device_memory, None),
        Side::B => (there_text, shown, None, p.device_memory),
    };
    Difference {
        topic,
        subject: label(p),
        a,
        b,
        a_bytes,
        b_bytes,
        effect,
    }
}
