//! Drawing: one pure function of `&State`, split by screen region. It reads the state and never
//! changes it; everything it shows was computed in `State::update`, except what depends on the
//! screen's size (column widths, sparkline columns).
//!
//! ```text
//! ┌ gpumon ─ host ─ driver ─ CUDA ─ every 1s ─ filter ─ PAUSED ─ stale ──────────┐ header.rs
//! │ ⚠ source failing since 12:03:07: reason        (only while the source fails)  │ header.rs
//! │ > GPU0 H200 [█████▓▒░░░░░] procs 96.1G  other 1.2G  rsvd 615M  free 41.9G    │ gpus.rs
//! │             util 48%  54°C  367W  mem ▁▂▃▅▇ (10m)  ⚠ 1 alert                  │   (2 lines
//! │   GPU1 ...                                                                    │    per GPU)
//! ├ processes (sorted by device memory) ─ filter: pid 4312 ──────────────────────┤ processes.rs
//! │   GPU     PID USER     FW    DEVICE  ...  COMMAND                             │
//! │ >   0    4312 ana      jax   105.4G  ...  python train.py                     │
//! ├ selected: 4312 python train.py ──────┬ alerts (1) ────────────────────────────┤
//! │ device ▁▂▃▅▇ (10m)                   │ 12:03:07 pid 4400 class: title         │ detail.rs
//! │ now 7686MiB  peak 7700MiB  ...       │                                        │ alerts.rs
//! └──────────────────────────────────────┴────────────────────────────────────────┘
//!  q quit  / filter  s snapshot  p pause  o sort  ? help        status / prompt    footer.rs
//!                        (help.rs: the keymap in a centred popup, over all of it)
//! ```
//!
//! The regions are bordered blocks that share their edges (`MergeStrategy::Exact` joins them).

mod alerts;
mod detail;
mod fleet;
mod footer;
mod gpus;
mod header;
mod help;
mod life;
mod pool;
mod processes;
mod signal;
mod spark;
mod text;
mod theme;

use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::symbols::merge::MergeStrategy;
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph};

use theme::Theme;

use crate::model::SourceState;
use crate::screen::State;

/// Below this size only a message is drawn.
pub const MIN_WIDTH: u16 = 72;
pub const MIN_HEIGHT: u16 = 20;

/// Rows the table needs besides its processes: its borders and header.
const TABLE_CHROME: u16 = 3;
/// The bottom panels get at least this many rows (borders included).
const MIN_BOTTOM: u16 = 8;

pub fn render(frame: &mut Frame, state: &State) {
    let area = frame.area();
    let theme = Theme::new(&state.config);
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let text = format!(
            "terminal too small: {}x{}, need at least {MIN_WIDTH}x{MIN_HEIGHT}",
            area.width, area.height
        );
        frame.render_widget(
            Paragraph::new(text).wrap(ratatui::widgets::Wrap { trim: true }),
            area,
        );
        return;
    }
    let main = Rect {
        height: area.height - 1,
        ..area
    };
    let footer_area = Rect {
        y: area.bottom() - 1,
        height: 1,
        ..area
    };
    let block = || {
        Block::bordered()
            .border_set(theme.g.border)
            .merge_borders(MergeStrategy::Exact)
    };
    let top_block = block().title(header::title(state, &theme, area.width));

    if state.overview() {
        fleet::render(frame, main, top_block, block, state, &theme);
    } else if state.machine().source == SourceState::Starting {
        let inner = top_block.inner(main);
        frame.render_widget(top_block, main);
        let middle = Rect {
            y: inner.y + inner.height / 2,
            height: 1,
            ..inner
        };
        let what = match state.screen.fleet {
            Some(_) => "waiting for the first reading",
            None => "starting NVML",
        };
        let text = format!("{what}{}", theme.g.ellipsis);
        frame.render_widget(
            Paragraph::new(Line::styled(text, theme.na)).alignment(Alignment::Center),
            middle,
        );
    } else {
        body(frame, main, top_block, block, state, &theme);
    }
    footer::render(frame, footer_area, state, &theme);
    if state.screen.help {
        help::render(frame, area, &theme);
    }
    if let Some(ask) = &state.screen.signal {
        signal::render(frame, area, ask, &theme);
    }
}

/// The GPU block's text when there is no GPU: not sampled yet, or why none can be read.
fn no_gpu(state: &State, theme: &Theme, width: u16) -> Vec<Line<'static>> {
    match state
        .machine()
        .info
        .as_ref()
        .and_then(|m| m.no_gpu.as_deref())
    {
        Some(reason) => text::wrap(
            &format!("no GPU readings: {reason}"),
            usize::from(width.saturating_sub(2)),
        )
        .into_iter()
        .take(2)
        .map(|l| Line::styled(format!("  {l}"), theme.alert))
        .collect(),
        None => vec![Line::styled("  no GPU sampled yet", theme.na)],
    }
}

/// The GPU block, the process table and the bottom panels, sharing their borders.
fn body(
    frame: &mut Frame,
    main: Rect,
    top_block: Block<'static>,
    block: impl Fn() -> Block<'static>,
    state: &State,
    theme: &Theme,
) {
    let banner = header::banner(state, theme, main.width.saturating_sub(2));
    let inner_width = main.width.saturating_sub(2);
    // Two lines per GPU when the table (one row) and the bottom panels still fit.
    let room_for_rest = TABLE_CHROME + 1 + MIN_BOTTOM - 2;
    let top_height = |lines: &[Line]| {
        let lines = u16::try_from(lines.len().max(1)).unwrap_or(u16::MAX);
        lines.saturating_add(2 + u16::from(banner.is_some()))
    };
    let mut gpu_lines = gpus::lines(state, theme, inner_width, true);
    if main.height.saturating_sub(top_height(&gpu_lines)) < room_for_rest {
        gpu_lines = gpus::lines(state, theme, inner_width, false);
    }
    if state.machine().gpus.is_empty() {
        gpu_lines = no_gpu(state, theme, inner_width);
    }
    let top_h = top_height(&gpu_lines).min(main.height - room_for_rest);
    let top = Rect {
        height: top_h,
        ..main
    };
    let inner = top_block.inner(top);
    frame.render_widget(top_block, top);
    let mut lines: Vec<Line> = banner.into_iter().collect();
    lines.extend(gpu_lines);
    frame.render_widget(Paragraph::new(lines), inner);

    // Rows from the GPU block's bottom border to the end, shared by the two blocks below.
    let rest = main.height - (top_h - 1);
    let wanted = TABLE_CHROME + u16::try_from(state.screen.rows.len().max(1)).unwrap_or(u16::MAX);
    let bottom_min = MIN_BOTTOM.max(rest / 3);
    let table_h = wanted.min(rest + 1 - bottom_min);
    let table = Rect {
        y: top.bottom() - 1,
        height: table_h,
        ..main
    };
    processes::render(frame, table, block(), state, theme);

    let bottom = Rect {
        y: table.bottom() - 1,
        height: main.bottom() - (table.bottom() - 1),
        ..main
    };
    let left_w = bottom.width / 2 + 1;
    let left = Rect {
        width: left_w,
        ..bottom
    };
    let right = Rect {
        x: left.right() - 1,
        width: bottom.width - left_w + 1,
        ..bottom
    };
    detail::render(frame, left, block(), state, theme);
    alerts::render(frame, right, block(), state, theme);
}
