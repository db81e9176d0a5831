//! The fleet overview: one row per host (name, GPUs, used/total, worst alert, sample age or why
//! it cannot be read), then the GPU bars of the host the cursor is on.
//!
//! ```text
//! ┌ gpumon ─ fleet of 3 hosts ─ every 1s ───────────────────────────────────────┐
//! │    # HOST          GPUS  USED / TOTAL      ALERT              STATE          │
//! │ >  1 gpu-07:9477      2   96.1G / 281G  34% ⚠ fragmentation-r… sample 1s ago  │
//! │    3 gpu-09:9479      -   n/a              unreachable since 12:03:10: conn…  │
//! ├ gpu-07:9477: Enter shows its processes ─────────────────────────────────────┤
//! │   GPU0 H200 [█████▓▒░░░░░] procs 96.1G  other 1.2G  rsvd 615M  free 41.9G    │
//! └─────────────────────────────────────────────────────────────────────────────┘
//! ```

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::text::fit;
use super::theme::Theme;
use super::{gpus, no_gpu};
use crate::model::{Level, units};
use crate::screen::{HostRow, HostState, State};

const MEMORY: usize = 18;
const ALERT: usize = 18;

/// The overview in `main`: the host table in the top block, the cursor's host's GPUs below.
pub fn render(
    frame: &mut Frame,
    main: Rect,
    top_block: Block<'static>,
    block: impl Fn() -> Block<'static>,
    state: &State,
    theme: &Theme,
) {
    let Some(fleet) = &state.screen.fleet else {
        return;
    };
    let width = usize::from(main.width.saturating_sub(2));
    // As wide as the longest name, within 8 columns and a fifth of the screen.
    let name = (fleet.rows.iter())
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(8, (width / 5).max(8));
    let mut lines = vec![Line::styled(
        fit(
            &format!(
                "   # {:<name$} GPUS  {:<MEMORY$}  {:<ALERT$} STATE",
                "HOST", "USED / TOTAL", "ALERT"
            ),
            width,
            theme.g.ellipsis,
        ),
        theme.title,
    )];
    for (i, row) in fleet.rows.iter().enumerate() {
        let columns = (name, width);
        lines.push(host_line(i, row, i == state.screen.host, columns, theme));
    }
    let wanted = u16::try_from(lines.len() + 2).unwrap_or(u16::MAX);
    let top_h = wanted.min(main.height.saturating_sub(4)).max(3);
    let top = Rect {
        height: top_h,
        ..main
    };
    // Keep the cursor's row in view when the hosts do not fit.
    let room = usize::from(top_h.saturating_sub(3));
    let skip = (state.screen.host + 1).saturating_sub(room);
    lines.drain(1..=skip.min(lines.len() - 1));
    let inner = top_block.inner(top);
    frame.render_widget(top_block, top);
    frame.render_widget(Paragraph::new(lines), inner);

    let below = Rect {
        y: top.bottom() - 1,
        height: main.bottom() - (top.bottom() - 1),
        ..main
    };
    let name = state.host_name().unwrap_or_default();
    let title = format!(" {name}: Enter shows its processes ");
    let gpu_block = block().title(Line::styled(
        fit(&title, width.saturating_sub(2), theme.g.ellipsis),
        theme.title,
    ));
    let inner = gpu_block.inner(below);
    frame.render_widget(gpu_block, below);
    let mut gpu_lines = super::header::banner(state, theme, inner.width)
        .into_iter()
        .collect::<Vec<_>>();
    if state.machine().gpus.is_empty() {
        gpu_lines.extend(no_gpu(state, theme, inner.width));
    } else {
        let two = gpus::lines(state, theme, inner.width, true).lines;
        let fits = two.len() + gpu_lines.len() <= usize::from(inner.height);
        gpu_lines.extend(if fits {
            two
        } else {
            gpus::lines(state, theme, inner.width, false).lines
        });
    }
    frame.render_widget(Paragraph::new(gpu_lines), inner);
}

/// Kinds of fault a remote host's reason starts with (`remote::FetchError`).
const FAULTS: [&str; 4] = ["unreachable", "slow", "refused", "bad answer"];

/// One host's row; `columns` is the name column's width and the whole row's.
fn host_line(
    i: usize,
    row: &HostRow,
    cursor: bool,
    (name, width): (usize, usize),
    theme: &Theme,
) -> Line<'static> {
    let mark = if cursor { ">" } else { " " };
    let gpus = if row.gpus == 0 {
        "-".to_string()
    } else {
        row.gpus.to_string()
    };
    let memory = match (row.used, row.total) {
        (Some(u), Some(t)) if t > 0 => {
            let pct = u.saturating_mul(100) / t;
            format!(
                "{:>6}/{:<6} {pct:>3}%",
                units::compact(u),
                units::compact(t)
            )
        }
        _ => "n/a".to_string(),
    };
    let lead = format!(
        "{mark} {:>2} {:<name$} {gpus:>4}  {memory:<MEMORY$}  ",
        i + 1,
        fit(&row.name, name, theme.g.ellipsis)
    );
    let base = if cursor { theme.selected } else { Style::new() };
    let mut spans = vec![Span::styled(lead.clone(), base)];
    let rest = width.saturating_sub(lead.chars().count());
    match &row.state {
        HostState::Failing { since_ms, reason } => {
            let since = units::clock(*since_ms);
            let text = match reason.split_once(": ") {
                Some((what, why)) if FAULTS.contains(&what) => {
                    format!("{what} since {since}: {why}")
                }
                _ => format!("failing since {since}: {reason}"),
            };
            spans.push(Span::styled(
                fit(&text, rest, theme.g.ellipsis),
                theme.alert,
            ));
        }
        state => {
            let alert = match &row.worst {
                Some((level, class)) => {
                    let oom = if *level == Level::Failure { "OOM " } else { "" };
                    format!("{} {oom}{class}", theme.g.warn)
                }
                None => "-".to_string(),
            };
            let alert_style = if row.worst.is_some() {
                theme.alert
            } else {
                theme.na
            };
            let alert = fit(&alert, ALERT, theme.g.ellipsis);
            let pad = ALERT.saturating_sub(alert.chars().count()) + 1;
            spans.push(Span::styled(alert, alert_style));
            spans.push(Span::raw(" ".repeat(pad)));
            let mut text = match state {
                HostState::Starting => "starting".to_string(),
                HostState::Ended => "replay ended".to_string(),
                HostState::Ok { age_ms: Some(a) } => {
                    format!("sample {} ago", units::duration_ms(*a))
                }
                _ => "no sample yet".to_string(),
            };
            if let Some(m) = row.matches {
                text = format!("{m} match  {text}");
            }
            let rest = rest.saturating_sub(ALERT + 1);
            spans.push(Span::styled(fit(&text, rest, theme.g.ellipsis), base));
        }
    }
    Line::from(spans)
}
