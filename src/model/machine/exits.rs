//! Exited processes: marked when a sample no longer lists them, kept `keep_exited_ms` and at most
//! `MAX_EXITED` of them (the latest to exit), so a host running many short jobs costs what is
//! kept, not every PID ever seen; the probes' maps kept only for the processes kept. Each pass is
//! linear in what is kept (a sort only of the exited ones, and only past the bound).

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{MapTrack, ProcKey, ProcessTrack};

/// Exited processes kept at most, the latest to exit first (besides `keep_exited_ms`).
pub const MAX_EXITED: usize = 1000;

/// Marks the processes the sample at `at` did not list as exited, and drops the exited ones
/// past `keep_ms` or past the `MAX_EXITED` latest.
pub fn mark(processes: &mut BTreeMap<ProcKey, ProcessTrack>, at: u64, keep_ms: u64) {
    let mut exited = 0usize;
    for t in processes.values_mut() {
        if t.last_seen_ms < at && t.exited_ms.is_none() {
            t.exited_ms = Some(at);
        }
        exited += usize::from(t.exited_ms.is_some());
    }
    processes.retain(|_, t| t.exited_ms.is_none_or(|e| at.saturating_sub(e) <= keep_ms));
    if exited <= MAX_EXITED {
        return;
    }
    // The latest exits first; among those of one moment, the latest seen, then the latest
    // started (the key's order: a fixed choice).
    let mut ends: Vec<(u64, u64, &ProcKey)> = processes
        .iter()
        .filter_map(|(k, t)| t.exited_ms.map(|e| (e, t.first_seen_ms, k)))
        .collect();
    if ends.len() <= MAX_EXITED {
        return;
    }
    ends.select_nth_unstable_by(MAX_EXITED, |a, b| b.cmp(a));
    let dropped: Vec<ProcKey> = ends[MAX_EXITED..]
        .iter()
        .map(|(_, _, k)| (*k).clone())
        .collect();
    for k in dropped {
        processes.remove(&k);
    }
}

/// Keeps the maps of the processes kept: a map's (pid, start) matches a process of that pid
/// started within a second of it.
pub fn keep_maps(
    maps: &mut BTreeMap<(u32, u64), MapTrack>,
    processes: &BTreeMap<ProcKey, ProcessTrack>,
) {
    if maps.is_empty() {
        return;
    }
    let kept: BTreeSet<(u32, u64)> = processes
        .keys()
        .filter_map(|k| Some((k.pid, k.start_time?)))
        .collect();
    maps.retain(|(pid, start), _| {
        kept.range((*pid, start.saturating_sub(1))..=(*pid, start.saturating_add(1)))
            .next()
            .is_some()
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Config, Machine};
    use crate::sample::{Framework, Sample};
    use crate::source::scripted::build::{GIB, gpu, process};

    /// A host running many short jobs: every sample lists 1,500 PIDs never seen before. What is
    /// kept stays at the sample's own plus `MAX_EXITED`, whatever the number seen.
    #[test]
    fn exited_processes_are_bounded_by_count_too() {
        let mut m = Machine::new(Config::new(1000, 600_000));
        let g = gpu(0, 800 * GIB, 30 * GIB, GIB);
        let (per, samples) = (1500u32, 12u32);
        for i in 0..samples {
            let processes = (0..per)
                .map(|j| {
                    process(
                        100_000 + i * per + j,
                        &g,
                        GIB / 64,
                        Framework::Pytorch,
                        "job",
                    )
                })
                .collect();
            m.ingest(Sample {
                at_ms: 1_763_812_900_000 + u64::from(i) * 1000,
                gpus: vec![g.clone()],
                processes,
                ..Default::default()
            });
            let exited = m
                .processes
                .values()
                .filter(|t| t.exited_ms.is_some())
                .count();
            assert!(exited <= MAX_EXITED, "sample {i}: {exited} exited kept");
            assert!(m.processes.len() <= per as usize + MAX_EXITED);
        }
        // The latest to exit are the ones kept: the previous sample's (more than the bound).
        let last = 100_000 + (samples - 2) * per;
        let exited: Vec<u32> = m
            .processes
            .values()
            .filter(|t| t.exited_ms.is_some())
            .map(|t| t.key.pid)
            .collect();
        assert_eq!(exited.len(), MAX_EXITED);
        assert!(exited.iter().all(|pid| (last..last + per).contains(pid)));
        assert_eq!(
            m.processes
                .values()
                .filter(|t| t.exited_ms.is_none())
                .count(),
            per as usize
        );
    }
}
