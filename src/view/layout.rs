//! Where each region goes: one pure function of the screen's size and `&State`. `render` draws
//! into these rectangles, and the app loop hit-tests mouse clicks against the same ones
//! (`view::mouse`), so a click lands on what is drawn.
//!
//! From the top: the GPU block, the memory chart (when there is room for it), the process table,
//! and the detail and alerts panels side by side. The table gets a row per process, and in the
//! job view one per job (up to what leaves the bottom panels their minimum), the bottom panels
//! what their text needs (at least their minimum; on a tall screen at most half when a probed
//! process's pool is charted; at most what leaves the chart its least rows where both fit, the
//! alerts pane aside), and the chart the rest. With the chart emphasised (`c`) the table keeps three
//! rows and the chart takes the others (and, on a small screen, the bottom panels' too).

use ratatui::layout::Rect;
use ratatui::text::Line;

use super::theme::Theme;
use super::{alerts, detail, gpus, header};
use crate::screen::{Emphasis, Pane, State};

/// Rows the table needs besides its processes: its borders and header.
const TABLE_CHROME: u16 = 3;
/// The bottom panels get at least this many rows (borders included).
const MIN_BOTTOM: u16 = 8;
/// The chart is drawn only with at least this many rows (borders included).
const MIN_CHART: u16 = 8;
/// Rows below the GPU block from which a pool chart gets half of the bottom panels' rows.
const TALL: u16 = 30;
/// Process rows the table keeps when the chart is emphasised.
const EMPHASISED_TABLE_ROWS: u16 = 3;
/// Process rows the table keeps beside the block map.
const MAP_TABLE_ROWS: u16 = 3;

/// The regions of one frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Regions {
    /// The GPU block, borders included.
    pub top: Rect,
    /// Each GPU's lines inside the GPU block, in index order (clipped to it; empty when cut off).
    pub gpus: Vec<Rect>,
    pub chart: Option<Rect>,
    pub table: Rect,
    /// The detail and alerts panels; `None` when the emphasised chart or the block map took
    /// their rows.
    pub bottom: Option<Rect>,
    /// The alerts panel: the right part of `bottom`, sharing its left border with the detail.
    pub alerts: Option<Rect>,
    /// The block map pane (`m`), in place of the chart and the bottom panels.
    pub map: Option<Rect>,
}

/// The regions and the GPU block's text, computed once per frame.
pub(super) struct Plan {
    pub regions: Regions,
    /// The banner (if any) and the GPU lines.
    pub top_lines: Vec<Line<'static>>,
    /// The detail pane's text, built to count its rows, with the width it was built for.
    pub detail: Option<(u16, Vec<Line<'static>>)>,
}

/// Lays out `main` (the screen without its footer) for `state`.
pub(super) fn plan(main: Rect, state: &State, theme: &Theme) -> Plan {
    let banner = header::banner(state, theme, main.width.saturating_sub(2));
    let inner_width = main.width.saturating_sub(2);
    // A GPU's readings line when the table (one row) and the bottom panels still fit.
    let room_for_rest = TABLE_CHROME + 1 + MIN_BOTTOM - 2;
    let top_height = |lines: usize| {
        let lines = u16::try_from(lines.max(1)).unwrap_or(u16::MAX);
        lines.saturating_add(2 + u16::from(banner.is_some()))
    };
    let mut gpu_lines = gpus::lines(state, theme, inner_width, true);
    if main
        .height
        .saturating_sub(top_height(gpu_lines.lines.len()))
        < room_for_rest
    {
        gpu_lines = gpus::lines(state, theme, inner_width, false);
    }
    if state.machine().gpus.is_empty() {
        gpu_lines.lines = super::no_gpu(state, theme, inner_width);
    }
    let top_h = top_height(gpu_lines.lines.len()).min(main.height - room_for_rest);
    let top = Rect {
        height: top_h,
        ..main
    };
    let inner = Rect {
        x: top.x + 1,
        y: top.y + 1,
        width: inner_width,
        height: top_h.saturating_sub(2),
    };
    let first = inner.y + u16::from(banner.is_some());
    let gpu_rects = gpu_lines
        .gpus
        .iter()
        .map(|r| {
            let y = first.saturating_add(u16::try_from(r.start).unwrap_or(u16::MAX));
            let end = first.saturating_add(u16::try_from(r.end).unwrap_or(u16::MAX));
            let y = y.min(inner.bottom());
            Rect {
                y,
                height: end.min(inner.bottom()) - y,
                ..inner
            }
        })
        .collect();

    // Rows from the GPU block's bottom border to the end, shared by the blocks below.
    let rest = main.height - (top_h - 1);
    let mut detail = None;
    let (chart_h, table_h, bottom_h) = if state.screen.map_open {
        let rows = u16::try_from(state.screen.table_len().max(1)).unwrap_or(u16::MAX);
        let table = TABLE_CHROME
            .saturating_add(rows)
            .min(TABLE_CHROME + MAP_TABLE_ROWS);
        (0, table, 0)
    } else {
        heights(rest, state, theme, main.width, &mut detail)
    };
    let mut y = top.bottom() - 1;
    let mut next = |h: u16| {
        let r = Rect {
            y,
            height: h,
            ..main
        };
        y += h.saturating_sub(1);
        r
    };
    let chart = (chart_h > 0).then(|| next(chart_h));
    let table = next(table_h);
    let bottom = (bottom_h > 0).then(|| next(bottom_h));
    let map = state
        .screen
        .map_open
        .then(|| next((rest + 1).saturating_sub(table_h)));
    let mut top_lines: Vec<Line<'static>> = banner.into_iter().collect();
    top_lines.extend(gpu_lines.lines);
    Plan {
        regions: Regions {
            top,
            gpus: gpu_rects,
            chart,
            table,
            bottom,
            alerts: bottom.map(|b| split(b).1),
            map,
        },
        top_lines,
        detail,
    }
}

/// The bottom panels' two parts: the detail pane on the left (one column more than half) and
/// the alerts on the right, sharing a border column.
pub(super) fn split(bottom: Rect) -> (Rect, Rect) {
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
    (left, right)
}

/// Heights of the chart, the table and the bottom panels (0: not drawn) sharing `rest` rows
/// (neighbours share a border row); `detail` gets the detail pane's text it counted.
fn heights(
    rest: u16,
    state: &State,
    theme: &Theme,
    width: u16,
    detail: &mut Option<(u16, Vec<Line<'static>>)>,
) -> (u16, u16, u16) {
    let rows = u16::try_from(state.screen.table_len().max(1)).unwrap_or(u16::MAX);
    let wanted = TABLE_CHROME.saturating_add(rows);
    let chart = state.screen.chart.is_some();
    if chart && state.screen.emphasis == Emphasis::Chart {
        let table = wanted.min(TABLE_CHROME + EMPHASISED_TABLE_ROWS);
        let chart_h = (rest + 2).saturating_sub(table + MIN_BOTTOM);
        if chart_h >= MIN_CHART {
            return (chart_h, table, MIN_BOTTOM);
        }
        return ((rest + 1).saturating_sub(table), table, 0);
    }
    let bottom_min = MIN_BOTTOM.max(rest / 3);
    let table = wanted.min(rest + 1 - bottom_min);
    let bottom = rest + 1 - table;
    // Beside a chart the panels take only the rows their text needs: no empty rows.
    let mut text = bottom_text(state, theme, width, detail)
        .saturating_add(2)
        .max(3);
    // A probed process's pool chart is what its selection is for: on a tall screen the panels
    // leave it half (on a short one they keep their text; `c` gives the chart the rows).
    if rest >= TALL
        && state
            .screen
            .chart
            .as_ref()
            .is_some_and(|c| c.pool.is_some())
    {
        text = text.min(bottom.div_ceil(2).max(MIN_BOTTOM));
    }
    // On a tall screen the chart keeps its least rows where the panels keep theirs beside it: a
    // selection whose text is long (a rank's, a process on its second GPU) is cut at its
    // panel's end rather than take the chart away and leave rows empty below. The alerts pane
    // (`a`) keeps the alert's text: it was asked for.
    if chart
        && rest >= TALL
        && state.screen.pane != Pane::Alerts
        && bottom + 1 >= MIN_CHART + MIN_BOTTOM
    {
        text = text.min(bottom + 1 - MIN_CHART);
    }
    let chart_h = (bottom + 1).saturating_sub(text);
    if chart && chart_h >= MIN_CHART {
        (chart_h, table, bottom + 1 - chart_h)
    } else {
        (0, table, bottom)
    }
}

/// Lines the text of the fuller bottom panel takes at this screen width; `detail` gets the
/// detail pane's text (the pane draws it rather than build it again).
fn bottom_text(
    state: &State,
    theme: &Theme,
    width: u16,
    detail: &mut Option<(u16, Vec<Line<'static>>)>,
) -> u16 {
    let left = width / 2 + 1;
    let right = width - left + 1;
    // Borders and one column of padding on each side.
    let detail_width = left.saturating_sub(4);
    let text = detail::text(state, theme, detail_width);
    let detail_rows = detail::wanted(text.as_deref(), detail_width);
    *detail = text.map(|t| (detail_width, t));
    let alerts = alerts::wanted(state, right.saturating_sub(4));
    u16::try_from(detail_rows.max(alerts)).unwrap_or(u16::MAX)
}
