//! Which process on A is which on B: matched by framework, command line and order (the first
//! `python train.py` started on A with the first on B, the second with the second), and what a
//! process without a partner is: one more of the same command on one side, one that exited there
//! (after an OOM, if one was raised), or one the other side never ran.

use std::collections::{HashMap, VecDeque};

use super::{Difference, Topic, explain, failures, label};
use crate::sample::Framework;
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

/// Whether two processes run the same thing, as a key: framework and a known command line
/// (`None` without one: such a process is the same as nothing).
type Kind<'a> = (&'a str, Option<Framework>);

fn kind(p: &Process) -> Option<Kind<'_>> {
    Some((p.command.as_deref()?, p.framework))
}

/// One side's processes indexed once, so that each lookup is constant time: its running ones
/// counted by kind, its exited ones by kind (in the order they started) and by (pid, kind).
struct Side<'a> {
    name: &'static str,
    snap: &'a Snapshot,
    running: HashMap<Kind<'a>, usize>,
    exited_by_kind: HashMap<Kind<'a>, &'a Process>,
    exited_by_pid: HashMap<(u32, Kind<'a>), &'a Process>,
}

impl<'a> Side<'a> {
    fn new(name: &'static str, snap: &'a Snapshot, running: &[&'a Process]) -> Side<'a> {
        let mut side = Side {
            name,
            snap,
            running: HashMap::new(),
            exited_by_kind: HashMap::new(),
            exited_by_pid: HashMap::new(),
        };
        for k in running.iter().filter_map(|p| kind(p)) {
            *side.running.entry(k).or_default() += 1;
        }
        for q in listed(snap, true) {
            if let Some(k) = kind(q) {
                side.exited_by_kind.entry(k).or_insert(q);
                side.exited_by_pid.entry((q.pid, k)).or_insert(q);
            }
        }
        side
    }
}

/// Matches the running processes of both sides and compares each pair; a process without a
/// partner is said to be on one side, with why. Linear in the processes: B's are queued by kind,
/// and A's n-th of a kind takes B's n-th.
pub(super) fn compare(a: &Snapshot, b: &Snapshot, out: &mut Vec<Difference>) {
    let (run_a, run_b) = (listed(a, false), listed(b, false));
    let mut queued: HashMap<Kind<'_>, VecDeque<usize>> = HashMap::new();
    for (j, pb) in run_b.iter().enumerate() {
        if let Some(k) = kind(pb) {
            queued.entry(k).or_default().push_back(j);
        }
    }
    let mut partner: Vec<Option<&Process>> = vec![None; run_a.len()];
    let mut taken = vec![false; run_b.len()];
    for (i, pa) in run_a.iter().enumerate() {
        // The first of B's not yet matched with the same command: the n-th with the n-th.
        if let Some(j) = kind(pa).and_then(|k| queued.get_mut(&k)?.pop_front()) {
            taken[j] = true;
            partner[i] = Some(run_b[j]);
        }
    }
    let (side_a, side_b) = (Side::new("A", a, &run_a), Side::new("B", b, &run_b));
    for (pa, pb) in run_a.iter().zip(&partner) {
        match pb {
            Some(pb) => explain::pair(a, pa, b, pb, out),
            None => out.push(alone(pa, &side_a, &side_b)),
        }
    }
    for (pb, _) in run_b.iter().zip(&taken).filter(|(_, t)| !**t) {
        out.push(alone(pb, &side_b, &side_a));
    }
}

/// A process running on `here` with no partner on the other side (`there`).
fn alone(p: &Process, here: &Side<'_>, there: &Side<'_>) -> Difference {
    let shown = format!("{}, {}", place(here.snap, p), size(p.device_memory));
    let (other, who) = (there.name, here.name);
    // The same process (same PID and command) exited on the other side, else one of its command.
    let k = kind(p);
    let gone = k.and_then(|k| {
        there
            .exited_by_pid
            .get(&(p.pid, k))
            .or_else(|| there.exited_by_kind.get(&k))
    });
    let there_snap = there.snap;
    let (there_text, topic, effect) = if let Some(q) = gone {
        let when = q.exited_at.as_deref().map_or("n/a", failures::clock);
        let oom = failures::of_process(there_snap, q.pid)
            .map(|f| {
                format!(
                    ", after its OOM at {} ({})",
                    failures::clock(&f.at),
                    f.class
                )
            })
            .unwrap_or_default();
        (
            format!("{}, exited at {when}{oom}", place(there_snap, q)),
            Topic::ProcessExited,
            format!(
                "It had exited on {other}'s side{oom}, so it holds no device memory there: its \
                 memory was given back, and counts on {who} only."
            ),
        )
    } else {
        let count = |side: &Side<'_>| k.and_then(|k| side.running.get(&k)).copied().unwrap_or(0);
        let (n_here, n_there) = (count(here), count(there));
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
    let (a, b, a_bytes, b_bytes) = if here.name == "A" {
        (shown, there_text, p.device_memory, None)
    } else {
        (there_text, shown, None, p.device_memory)
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
