//! The fleet overview: one row per host (name, a memory bar per GPU, used/total, its worst alert,
//! sample age or why it cannot be read), sorted by worst alert, memory used or name (`o`), the
//! distributed jobs across the hosts when there are any (`jobs.rs`), then the GPU bars of the
//! host the cursor is on. The bars and the alert take the room a wide
//! screen has (`row.rs`).
//!
//! ```text
//! ┌ gpumon ─ fleet of 3 hosts ─ every 1s ────────────────────────────────────────────────────┐
//! │   # HOST        GPUS MEMORY                  USED / TOTAL     ALERT (sorted)      STATE   │
//! │>  2 gpu-07:9477    2 [███▓▒░░░] [█▒░░░░░░]     82G/160G   51% ⚠ growth-step pid 7 0s ago  │
//! │   3 gpu-09:9479    -                        n/a              unreachable since 12:01:50… │
//! ├ gpu-07:9477: Enter shows its processes ──────────────────────────────────────────────────┤
//! │   GPU0 H200 [█████▓▒░░░░░] procs 96.1G  other 1.2G  rsvd 615M  free 41.9G                 │
//! └──────────────────────────────────────────────────────────────────────────────────────────┘
//! ```

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::panel::Panel;
use super::text::fit;
use super::theme::Theme;
use super::{gpus, no_gpu};
use crate::screen::State;

mod jobs;
mod row;

/// The overview in `main`: the host table in the top block, the cursor's host's GPUs below.
pub fn render(
    frame: &mut Frame,
    main: Rect,
    top_block: Panel<'static>,
    block: impl Fn() -> Panel<'static>,
    state: &State,
    theme: &Theme,
) {
    let Some(fleet) = &state.screen.fleet else {
        return;
    };
    let width = usize::from(main.width.saturating_sub(2));
    let columns = row::Columns::of(&fleet.rows, width);
    let mut lines = vec![Line::styled(
        fit(&columns.header(fleet.sort), width, theme.g.ellipsis),
        theme.title,
    )];
    let mut cursor_at = 0;
    for (i, r) in fleet.rows.iter().enumerate() {
        let cursor = r.index == state.screen.host;
        if cursor {
            cursor_at = i;
        }
        lines.push(row::line(r, cursor, &columns, theme));
    }
    let wanted = u16::try_from(lines.len() + 2).unwrap_or(u16::MAX);
    // The jobs' block, when there are jobs: as tall as they are, within a third of the screen.
    let jobs_h = if fleet.jobs.is_empty() {
        0
    } else {
        let want = u16::try_from(fleet.jobs.len() * jobs::LINES + 2).unwrap_or(u16::MAX);
        want.min((main.height / 3).max(4))
    };
    let top_h = wanted
        .min(main.height.saturating_sub(4 + jobs_h.saturating_sub(1)))
        .max(3);
    let top = Rect {
        height: top_h,
        ..main
    };
    // Keep the cursor's row in view when the hosts do not fit.
    let room = usize::from(top_h.saturating_sub(3));
    let skip = (cursor_at + 1).saturating_sub(room);
    lines.drain(1..=skip.min(lines.len() - 1));
    let inner = top_block.inner(top);
    frame.render_widget(top_block, top);
    frame.render_widget(Paragraph::new(lines), inner);

    let mut above = top;
    if jobs_h > 0 {
        let area = Rect {
            y: top.bottom() - 1,
            height: jobs_h.min(main.bottom().saturating_sub(top.bottom() - 1)),
            ..main
        };
        let jobs_block = block().title(Line::styled(
            fit(
                &jobs::title(&fleet.jobs),
                width.saturating_sub(2),
                theme.g.ellipsis,
            ),
            theme.title,
        ));
        let inner = jobs_block.inner(area);
        frame.render_widget(jobs_block, area);
        let room = usize::from(inner.height);
        let lines = jobs::lines(&fleet.jobs, usize::from(inner.width), room, theme);
        frame.render_widget(Paragraph::new(lines), inner);
        above = area;
    }
    let below = Rect {
        y: above.bottom() - 1,
        height: main.bottom().saturating_sub(above.bottom() - 1),
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
