//! The overview's distributed jobs, each job id once across hosts, two lines a job: its id, its
//! running ranks against the world size, memory and ranks per host; then its root-cause rank
//! when a host raised an alert about the job, its largest rank against the median, and what
//! does not hold together.
//!
//! ```text
//! ├ 1 distributed job ─────────────────────────────────────────────────────────────┤
//! │ torchrun:ddp-7f3a   2/2 ranks   20.3G  gpu-a 1, gpu-b 1                         │
//! │   ⚠ root cause rank 0 on gpu-a (pid 1446): device-full · largest rank 0 on gpu… │
//! ```

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::model::units;
use crate::sample::job::{MAX_JOB_ID, printable};
use crate::screen::FleetJob;
use crate::view::text::fit;
use crate::view::theme::Theme;

/// Lines a job takes.
pub const LINES: usize = 2;

/// The block's title: how many jobs, and how many span hosts.
pub fn title(jobs: &[FleetJob]) -> String {
    let spanning = jobs.iter().filter(|j| j.hosts.len() > 1).count();
    let s = if jobs.len() == 1 { "" } else { "s" };
    format!(
        " {} distributed job{s}, {spanning} across hosts ",
        jobs.len()
    )
}

/// The lines of `jobs` in `width` columns, at most `room` lines (the last says how many jobs
/// did not fit).
pub fn lines(jobs: &[FleetJob], width: usize, room: usize, theme: &Theme) -> Vec<Line<'static>> {
    let fits = if jobs.len() * LINES <= room {
        jobs.len()
    } else {
        room.saturating_sub(1) / LINES
    };
    let ids: Vec<String> = jobs.iter().map(|j| printable(&j.id, MAX_JOB_ID)).collect();
    let id_width = ids
        .iter()
        .map(|i| i.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(12, (width / 3).max(12));
    let mut out = Vec::new();
    for (j, id) in jobs.iter().zip(&ids).take(fits) {
        out.push(first(j, id, id_width, width, theme));
        out.push(second(j, width, theme));
    }
    if fits < jobs.len() {
        let more = format!("   +{} more job(s)", jobs.len() - fits);
        out.push(Line::styled(fit(&more, width, theme.g.ellipsis), theme.na));
    }
    out
}

/// "torchrun:ddp   2/2 ranks   20.3G  gpu-a 1, gpu-b 1".
fn first(j: &FleetJob, id: &str, id_width: usize, width: usize, theme: &Theme) -> Line<'static> {
    let world = j.world_size.map_or("?".to_string(), |w| w.to_string());
    let hosts: Vec<String> = j
        .hosts
        .iter()
        .map(|h| format!("{} {}", h.name, h.ranks))
        .collect();
    let text = format!(
        " {:<id_width$} {:>9} {:>7}  {}",
        fit(id, id_width, theme.g.ellipsis),
        format!("{}/{world} ranks", j.ranks),
        units::compact(j.device),
        hosts.join(", "),
    );
    Line::from(Span::raw(fit(&text, width, theme.g.ellipsis)))
}

/// "  ⚠ root cause rank 0 on gpu-a (pid 1446): device-full · largest rank 0 on gpu-a …".
fn second(j: &FleetJob, width: usize, theme: &Theme) -> Line<'static> {
    let mut parts: Vec<(String, Style)> = Vec::new();
    if let Some(r) = &j.root_cause {
        let pid = r.pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
        let rank = r
            .rank
            .map_or_else(|| "a rank".to_string(), |n| format!("rank {n}"));
        parts.push((
            format!(
                "{} root cause {rank} on {}{pid}: {}",
                theme.g.warn, r.host, r.class
            ),
            theme.alert,
        ));
    }
    match &j.largest {
        Some(l) => {
            let rank = l.rank.map_or_else(|| "?".to_string(), |n| n.to_string());
            let ratio = l
                .ratio
                .map(|r| format!(", {r:.2}x the median"))
                .unwrap_or_default();
            parts.push((
                format!(
                    "largest rank {rank} on {} (pid {}) {}{ratio}",
                    l.host,
                    l.pid,
                    units::compact(l.device)
                ),
                Style::new(),
            ));
        }
        None if j.ranks == 0 => parts.push(("no running rank".to_string(), theme.na)),
        None => parts.push(("no device-memory reading".to_string(), theme.na)),
    }
    for p in &j.problems {
        parts.push((format!("problem: {p}"), theme.alert));
    }
    let mut spans = vec![Span::raw("   ")];
    let mut left = width.saturating_sub(3);
    for (i, (text, style)) in parts.into_iter().enumerate() {
        let sep = if i == 0 { "" } else { theme.g.dot };
        let text = fit(&format!("{sep}{text}"), left, theme.g.ellipsis);
        left = left.saturating_sub(text.chars().count());
        spans.push(Span::styled(text, style));
        if left == 0 {
            break;
        }
    }
    Line::from(spans)
}
