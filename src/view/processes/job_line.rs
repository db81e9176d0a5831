//! A job's line in the job view: "job torchrun:ddp (torchrun)  2/2 ranks on GPU0,1  23.4G =
//! 14.4G + 9.0G  rank 0 1.6x the median, growing alone", from the figures the screen's update
//! derived.

use super::super::theme::Theme;
use crate::model::{Imbalance, units};
use crate::screen::{JobLine, State};

/// Up to this many ranks, each one's memory is named; more give the smallest and the largest.
const EACH_UP_TO: usize = 4;

/// The line in `width` columns: what does not fit gives way, the per-rank memory first, then the
/// GPUs (the GPU column names them), then the launcher; the id, the ranks and the imbalance stay.
pub(super) fn text(line: &JobLine, state: &State, theme: &Theme, width: usize) -> String {
    let Some(job) = state.machine().jobs.get(line.job) else {
        return String::new();
    };
    let ranks = match job.world_size {
        Some(w) => format!("{}/{w} ranks", line.here),
        None => format!("{} ranks", line.here),
    };
    let gpus = (!line.gpus.is_empty()).then(|| format!("on GPU{}", gpu_list(&line.gpus)));
    let problems = match job.problems.len() {
        0 => None,
        1 => Some(format!("{} 1 problem", theme.g.warn)),
        n => Some(format!("{} {n} problems", theme.g.warn)),
    };
    // (text, the round in which it gives way: 0 never), groups of words apart by two spaces.
    let groups: [&[(Option<String>, u8)]; 5] = [
        &[
            (Some(format!("job {}", job.id)), 0),
            (Some(format!("({})", job.launcher.label())), 3),
        ],
        &[(Some(ranks), 0), (gpus, 2)],
        &[(per_rank(&line.per_rank, job.device), 1)],
        &[(job.imbalance.as_ref().map(imbalance), 0)],
        &[(problems, 0)],
    ];
    let mut text = String::new();
    for round in 0..=3 {
        text = groups
            .iter()
            .map(|g| {
                g.iter()
                    .filter(|(_, gives)| *gives == 0 || *gives > round)
                    .filter_map(|(t, _)| t.as_deref())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .filter(|g| !g.is_empty())
            .collect::<Vec<_>>()
            .join("  ");
        if text.chars().count() <= width {
            break;
        }
    }
    text
}

/// "0,1", "0-7", "0-3,6".
fn gpu_list(gpus: &[u32]) -> String {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for &g in gpus {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == g => *end = g,
            _ => runs.push((g, g)),
        }
    }
    let run = |&(a, b): &(u32, u32)| match b - a {
        0 => a.to_string(),
        1 => format!("{a},{b}"),
        _ => format!("{a}-{b}"),
    };
    runs.iter().map(run).collect::<Vec<_>>().join(",")
}

/// "23.4G = 14.4G + 9.0G" (each rank's, in rank order), "72.0G, 9.0G..9.1G a rank"; `None`
/// with no rank running.
fn per_rank(each: &[Option<u64>], total: u64) -> Option<String> {
    if each.is_empty() {
        return None;
    }
    let size = |b: &Option<u64>| b.map_or_else(|| "n/a".to_string(), units::compact);
    if each.len() <= EACH_UP_TO {
        let sizes: Vec<String> = each.iter().map(size).collect();
        return Some(format!("{} = {}", units::compact(total), sizes.join(" + ")));
    }
    let known = each.iter().flatten();
    let (min, max) = (known.clone().min()?, known.max()?);
    Some(format!(
        "{}, {}..{} a rank",
        units::compact(total),
        units::compact(*min),
        units::compact(*max)
    ))
}

/// "rank 0 1.6x the median, growing alone".
fn imbalance(i: &Imbalance) -> String {
    let who = i
        .rank
        .map_or_else(|| format!("pid {}", i.pid), |r| format!("rank {r}"));
    let ratio = if i.ratio.is_finite() {
        format!("{who} {:.1}x the median", i.ratio)
    } else {
        format!("{who} {}, the median 0", units::compact(i.largest))
    };
    if i.grows_alone {
        format!("{ratio}, growing alone")
    } else {
        ratio
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpus_in_runs() {
        assert_eq!(gpu_list(&[0, 1]), "0,1");
        assert_eq!(gpu_list(&[0, 1, 2, 3, 4, 5, 6, 7]), "0-7");
        assert_eq!(gpu_list(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(gpu_list(&[2]), "2");
    }

    #[test]
    fn few_ranks_each_many_ranks_their_span() {
        const G: u64 = 1 << 30;
        assert_eq!(
            per_rank(&[Some(2 * G), Some(G)], 3 * G).unwrap(),
            "3G = 2G + 1G"
        );
        assert_eq!(per_rank(&[Some(G), None], G).unwrap(), "1G = 1G + n/a");
        let eight = [Some(G); 8];
        let mut eight = eight.to_vec();
        eight[3] = Some(2 * G);
        assert_eq!(per_rank(&eight, 9 * G).unwrap(), "9G, 1G..2G a rank");
        assert_eq!(per_rank(&[], 0), None);
    }

    #[test]
    fn an_imbalance_names_its_rank_and_whether_it_grows_alone() {
        let mut i = Imbalance {
            pid: 1446,
            rank: Some(0),
            largest: 16 << 30,
            median: 10 << 30,
            ratio: 1.6,
            grows_alone: true,
        };
        assert_eq!(imbalance(&i), "rank 0 1.6x the median, growing alone");
        i.rank = None;
        i.grows_alone = false;
        i.ratio = f64::INFINITY;
        assert_eq!(imbalance(&i), "pid 1446 16G, the median 0");
    }
}
