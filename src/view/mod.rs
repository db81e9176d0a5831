//! Drawing: one pure function of `&State`, split by screen region. It reads the state and never
//! changes it; everything it shows was computed in `State::update`, except what depends on the
//! screen's size (the layout, column widths, sparkline columns).
//!
//! ```text
//! ┌ gpumon ─ host ─ driver ─ CUDA ─ every 1s ─ filter ─ PAUSED ─ stale ──────────┐ header.rs
//! │ ⚠ source failing since 12:03:07: reason        (only while the source fails)  │ header.rs
//! │ > GPU0 H200 [█████▓▒░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░] │ gpus.rs
//! │             procs 96.1G  other 1.2G  rsvd 615M  free 41.9G  (beside the bar │   (numbers on
//! │             util 48%  54°C  367W  mem ▁▂▃▅▇ (10m)  ⚠ 1 alert  when it fits)  │    their own line
//! │     MIG 1/0   3g.40gb  [███░░░] used 20.0G of 39.2G  1 process  (MIG on)     │    when needed)
//! ├ GPU0 memory, last 10m ───────────────────────────────────────────────────────┤ chart.rs
//! │140G│ total ⠉⠉⠉⠉  used ⣀⣀⡠⠔  selected process ⣿⣿  (when there is room)         │
//! ├ processes (sorted by device memory) ─ filter: pid 4312 ──────────────────────┤ processes.rs
//! │   GPU     PID USER     FW    DEVICE  ...  SM% MEM% ENC% DEC% COMMAND          │
//! │ >   0    4312 ana      jax   105.4G  ...   97   41    0    0 python train.py  │
//! ├ selected: 4312 python train.py ──────┬ alerts (1) ────────────────────────────┤
//! │ device ▁▂▃▅▇ (10m)                   │ 12:03:07 pid 4400 class: title         │ detail.rs
//! │ now 7.5G (7686 MiB)  peak ...        │                                        │ alerts.rs
//! └──────────────────────────────────────┴────────────────────────────────────────┘
//!  q quit  / filter  s snapshot  p pause  o sort  ? help        status / prompt    footer.rs
//!                        (help.rs: the keymap in a centred popup, over all of it)
//! ```
//!
//! With `m`, the selected process's block map (`map.rs`) takes the place of the chart and the
//! bottom panels, below a table of at most three rows. An alert opened with Enter
//! (`alert_view.rs`) takes every row between the header and the footer.
//!
//! Where each region goes is `layout.rs` (also used to hit-test the mouse, `mouse.rs`).
//!
//! The regions are bordered blocks that share their edges (`MergeStrategy::Exact` joins them).

pub mod alert_view;
mod alerts;
mod chart;
mod detail;
mod draw;
mod fleet;
mod footer;
mod gpus;
mod header;
mod help;
mod layout;
mod life;
mod map;
pub mod mouse;
mod panel;
mod pool;
mod processes;
mod rank;
mod signal;
mod spark;
mod split;
mod text;
mod theme;

use std::hash::Hasher;
use std::ops::Range;

use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::text::{Line, Text};
use ratatui::widgets::Paragraph;

use panel::Panel;

pub use layout::Regions;
use theme::Theme;

use crate::model::SourceState;
use crate::paint::{self, Stamps};
use crate::screen::State;

/// Below this size only a message is drawn.
pub const MIN_WIDTH: u16 = 72;
pub const MIN_HEIGHT: u16 = 20;

pub fn render(frame: &mut Frame, state: &State) {
    render_stamped(frame, state, &Stamps::default());
}

/// `render`, stamping the regions whose cells are a function of what they show (`Stamps`), when
/// no popup lies over them: on the main screen the panels' borders and titles a row at a time,
/// the GPU block's lines, the chart's rows, the table's lines, the detail and alert panes'
/// lines, and the footer. A region stamped alike in `before` (the frame on the terminal) is left
/// undrawn: the painter puts back what it shows.
pub fn render_stamped(frame: &mut Frame, state: &State, before: &Stamps) -> Stamps {
    let mut stamps = Stamps::default();
    // A popup is drawn over the regions: none is stamped (and so none left undrawn).
    let popup = state.screen.help || state.screen.signal.is_some();
    let none = Stamps::default();
    let before = if popup { &none } else { before };
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
        return stamps;
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
    let mut stamping = Stamping::new(before, &mut stamps);
    let block = || Panel::new(theme.g.border);
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
    } else if state.open_alert().is_some() {
        alert_view::render(frame, main, top_block, state, &theme);
    } else {
        body(frame, main, top_block, block, state, &theme, &mut stamping);
        stamping.chrome(frame);
    }
    let footer = footer::line(state, &theme, footer_area.width);
    stamping.draw_lines(frame, footer_area, footer);
    if state.screen.help {
        help::render(frame, area, &theme);
    }
    if let Some(ask) = &state.screen.signal {
        signal::render(frame, area, ask, &theme);
    }
    if popup { Stamps::default() } else { stamps }
}

/// The stamps of the frame before and of this one, as the regions are drawn, and the panels
/// whose borders are drawn once the regions are (`chrome`).
pub(crate) struct Stamping<'a> {
    before: &'a Stamps,
    now: &'a mut Stamps,
    panels: Vec<(Panel<'static>, Rect)>,
}

impl<'a> Stamping<'a> {
    fn new(before: &'a Stamps, now: &'a mut Stamps) -> Self {
        Stamping {
            before,
            now,
            panels: Vec::new(),
        }
    }

    /// Stamps `area` with `content`; whether it was stamped alike before and need not be drawn.
    fn kept(&mut self, area: Rect, content: u64) -> bool {
        self.now.stamp(self.before, area, content)
    }

    /// `draw::draw_lines` of `lines` into `area`, each line's row stamped with it (and the rows
    /// under them as blank): a row stamped alike before is not drawn.
    fn draw_lines<'t>(&mut self, frame: &mut Frame, area: Rect, lines: impl Into<Text<'t>>) {
        draw::draw_lines_kept(frame, area, lines, |row, content: &dyn Fn() -> u64| {
            self.kept(row, content())
        });
    }

    /// `panel` drawn around `area` by `chrome`, after the regions inside it.
    fn panel(&mut self, panel: Panel<'static>, area: Rect) {
        self.panels.push((panel, area));
    }

    /// Draws the panels' borders and titles, each row of them stamped with the panels that
    /// cross it: they are drawn unless every row was stamped alike before. A region draws only
    /// inside its panel, so drawing the panels last changes no cell; they are drawn in the
    /// order they were given, as borders are merged onto those drawn before.
    fn chrome(&mut self, frame: &mut Frame) {
        let area = frame.area();
        let mut all_kept = true;
        let mut runs: Vec<Range<u16>> = Vec::new();
        let panels: Vec<(u64, Rect, Rect)> = self
            .panels
            .iter()
            .map(|(panel, at)| {
                let at = at.intersection(area);
                (paint::hash(&(panel, at)), at, panel.inner(at))
            })
            .collect();
        for y in area.top()..area.bottom() {
            let mut h = paint::hasher();
            runs.clear();
            for &(hash, at, inner) in &panels {
                if y < at.top() || y >= at.bottom() {
                    continue;
                }
                h.write_u64(hash);
                if y < inner.top() || y >= inner.bottom() {
                    runs.push(at.left()..at.right());
                } else {
                    runs.push(at.left()..inner.left());
                    runs.push(inner.right()..at.right());
                }
            }
            runs.retain(|r| !r.is_empty());
            paint::join(&mut runs);
            let content = h.finish();
            for run in &runs {
                let run = Rect::new(run.start, y, run.end - run.start, 1);
                all_kept &= self.kept(run, content);
            }
        }
        if !all_kept {
            for (panel, at) in &self.panels {
                frame.render_widget(panel, *at);
            }
        }
    }
}

/// The regions of a frame of size `area` showing `state` (`None` while too small or starting):
/// what `render` draws into, for hit-testing the mouse.
pub fn regions(area: Rect, state: &State) -> Option<Regions> {
    if area.width < MIN_WIDTH
        || area.height < MIN_HEIGHT
        || state.machine().source == SourceState::Starting
    {
        return None;
    }
    let main = Rect {
        height: area.height - 1,
        ..area
    };
    Some(layout::plan(main, state, &Theme::new(&state.config)).regions)
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

/// The GPU block, the chart, the process table and the bottom panels, sharing their borders.
fn body(
    frame: &mut Frame,
    main: Rect,
    top_block: Panel<'static>,
    block: impl Fn() -> Panel<'static>,
    state: &State,
    theme: &Theme,
    stamps: &mut Stamping,
) {
    let plan = layout::plan(main, state, theme);
    let r = &plan.regions;
    let inner = top_block.inner(r.top);
    stamps.panel(top_block, r.top);
    stamps.draw_lines(frame, inner, plan.top_lines);
    let detail = plan.detail;
    if let Some(area) = r.chart {
        chart::render(frame, area, block(), state, theme, stamps);
    }
    processes::render(frame, r.table, block(), state, theme, stamps);
    if let Some(area) = r.map {
        map::render(frame, area, block(), state, theme, stamps);
    }
    let Some(bottom) = r.bottom else { return };
    let (left, right) = layout::split(bottom);
    detail::render(frame, left, block(), state, theme, detail, stamps);
    alerts::render(frame, right, block(), state, theme, stamps);
}
