//! The detail pane's lines for a rank of a distributed job: its job, launcher, rank, local rank,
//! node and what does not hold together (`who`), and the job's ranks side by side, the selected
//! one marked, memory a rank holds on another GPU named with that GPU (`side_by_side`, at most
//! `MAX_RANKS` ranks). A process whose initial environment could not be read, and whose probe
//! did not say, is said to be of an unknown job: never guessed.

use ratatui::text::{Line, Span};

use super::theme::Theme;
use crate::model::{Machine, ProcessTrack, RankRow, units};
use crate::screen::State;

/// Ranks listed side by side at most; the window keeps the selected one.
const MAX_RANKS: usize = 8;
/// The job's own problems listed at most (the rest counted).
const MAX_PROBLEMS: usize = 2;

/// Who the process is in its job: "job torchrun:ddp (torchrun)", "rank 0/2  local rank 0  node
/// 0", what its probe said, its problem and the job's; empty for a process that is no rank.
pub fn who(t: &ProcessTrack, state: &State, theme: &Theme) -> Vec<Line<'static>> {
    let s = &t.sample;
    let Some(r) = &s.rank else {
        return Vec::new();
    };
    let machine = state.machine();
    let of = machine.job_of(s.pid);
    let mut out = vec![match &r.job {
        Some(id) => Line::raw(format!("job {id} ({})", r.launcher.label())),
        None => Line::from(vec![
            Span::styled("job unknown", theme.na),
            Span::raw(format!(" ({}): nothing names it", r.launcher.label())),
        ]),
    }];
    let rank = of.map_or(r.rank, |(_, row)| row.rank);
    let mut line = vec![Span::raw("rank ")];
    line.push(match rank {
        Some(n) => Span::raw(n.to_string()),
        None => Span::styled("?", theme.na),
    });
    if let Some(w) = r.world_size {
        line.push(Span::raw(format!("/{w}")));
    }
    if let Some(l) = r.local_rank {
        line.push(Span::raw(format!("  local rank {l}")));
    }
    if let Some(n) = r.node {
        line.push(Span::raw(format!("  node {n}")));
    }
    out.push(Line::from(line));
    if let Some(inside) = &r.inside {
        let mut said = format!("its probe: {}", inside.framework.label());
        if let (Some(n), Some(w)) = (inside.rank, inside.world_size) {
            said += &format!(" rank {n}/{w}");
        }
        if let Some(b) = &inside.backend {
            said += &format!(", backend {b}");
        }
        out.push(Line::raw(said));
    }
    if let Some(p) = &r.problem {
        out.push(Line::styled(format!("rank unknown: {p}"), theme.alert));
    }
    if let Some((job, _)) = of {
        let own = format!("pid {}: ", s.pid);
        let others: Vec<&String> = job
            .problems
            .iter()
            .filter(|p| !p.starts_with(&own))
            .collect();
        for p in others.iter().take(MAX_PROBLEMS) {
            out.push(Line::styled(format!("in the job: {p}"), theme.alert));
        }
        if others.len() > MAX_PROBLEMS {
            out.push(Line::styled(
                format!("in the job: {} more", others.len() - MAX_PROBLEMS),
                theme.alert,
            ));
        }
    }
    out
}

/// "job unknown: initial environment not readable" for a process whose launcher's variables
/// could not be read and whose probe did not say (the settings' reason says why it could not).
pub fn unknown(t: &ProcessTrack, theme: &Theme) -> Option<Line<'static>> {
    let s = &t.sample;
    (s.rank.is_none() && s.settings.value().is_none())
        .then(|| Line::styled("job unknown: initial environment not readable", theme.na))
}

/// The job's ranks side by side (device memory, pool allocated/reserved where probed, growth),
/// the selected one marked; empty for a process of no job.
pub fn side_by_side(
    t: &ProcessTrack,
    state: &State,
    theme: &Theme,
    width: u16,
) -> Vec<Line<'static>> {
    let machine = state.machine();
    let Some((job, own)) = machine.job_of(t.sample.pid) else {
        return Vec::new();
    };
    let probed = job.ranks.iter().any(|r| r.reserved.is_some());
    // The pool's column only where a rank was probed and the pane is wide enough.
    let pool = probed && usize::from(width) >= ROW_WITH_POOL;
    let mut head = String::from("  rank GPU  device");
    if pool {
        head += "  alloc/pool";
    }
    head += "   growth";
    let mut out = vec![Line::styled(head, theme.title)];
    let at = job.ranks.iter().position(|r| std::ptr::eq(r, own));
    let window = window(job.ranks.len(), at.unwrap_or(0));
    if window.start > 0 {
        out.push(more(window.start, "above", theme));
    }
    for r in &job.ranks[window.clone()] {
        let mark = if std::ptr::eq(r, own) { "> " } else { "  " };
        out.push(row(r, mark, pool, machine, theme));
        if !r.elsewhere.is_empty() {
            let also: Vec<String> = r
                .elsewhere
                .iter()
                .map(|(uuid, b)| {
                    let size = b.map_or_else(|| "n/a".to_string(), units::compact);
                    format!("GPU{} {size}", gpu_index(machine, uuid))
                })
                .collect();
            out.push(Line::raw(format!("       also on {}", also.join(", "))));
        }
    }
    if window.end < job.ranks.len() {
        out.push(more(job.ranks.len() - window.end, "below", theme));
    }
    out
}

/// Columns a rank's row takes with its pool's column.
const ROW_WITH_POOL: usize = 39;

/// One rank's row: "> ···0   0   14.4G   4.0G/9.0G  +130M/s".
fn row(r: &RankRow, mark: &str, pool: bool, machine: &Machine, theme: &Theme) -> Line<'static> {
    let rank = r.rank.map_or_else(|| "?".to_string(), |n| n.to_string());
    let size = |b: Option<u64>| b.map_or_else(|| "n/a".to_string(), units::compact);
    let mut text = format!(
        "{mark}{rank:>4} {:>3} {:>7}",
        gpu_index(machine, &r.gpu),
        size(r.device)
    );
    if pool {
        let figures = match (r.allocated, r.reserved) {
            (None, None) => "-".to_string(),
            (a, b) => format!("{}/{}", size(a), size(b)),
        };
        text += &format!("  {figures:>10}");
    }
    let growth = match (r.exited_ms, r.growth) {
        (Some(_), _) => "exited".to_string(),
        (None, Some(g)) => units::growth(g),
        (None, None) => "n/a".to_string(),
    };
    text += &format!(" {growth:>8}");
    if r.running() {
        Line::raw(text)
    } else {
        Line::styled(text, theme.na)
    }
}

/// "… 3 more ranks below".
fn more(n: usize, where_: &str, theme: &Theme) -> Line<'static> {
    let ranks = if n == 1 { "rank" } else { "ranks" };
    Line::styled(
        format!("  {} {n} more {ranks} {where_}", theme.g.ellipsis),
        theme.na,
    )
}

/// "0" for GPU 0; "?" for a GPU the machine does not list.
fn gpu_index(machine: &Machine, uuid: &str) -> String {
    machine
        .gpus
        .get(uuid)
        .map_or_else(|| "?".to_string(), |g| g.sample.index.to_string())
}

/// The ranks shown of `len`, at most `MAX_RANKS`, keeping `selected` with ranks on each side.
fn window(len: usize, selected: usize) -> std::ops::Range<usize> {
    if len <= MAX_RANKS {
        return 0..len;
    }
    let start = selected.saturating_sub(MAX_RANKS / 2).min(len - MAX_RANKS);
    start..start + MAX_RANKS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_keeps_the_selected_rank_and_its_neighbours() {
        assert_eq!(window(2, 1), 0..2);
        assert_eq!(window(8, 7), 0..8);
        assert_eq!(window(64, 0), 0..8);
        assert_eq!(window(64, 30), 26..34);
        assert_eq!(window(64, 63), 56..64);
    }
}
